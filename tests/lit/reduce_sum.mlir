// Sums of 8 elements: bounded by 8 times the element range.

// At most 10**8 each: below 2**31.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=-100000000:100000000 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 6
// CHECK-LABEL: func.func public @main(%arg0: tensor<8xi32>
// CHECK-NEXT:    %[[Z:.*]] = stablehlo.constant dense<0> : tensor<i32>
// CHECK-NEXT:    %[[S:.*]] = stablehlo.reduce(%arg0 init: %[[Z]]) applies stablehlo.add across dimensions = [0] : (tensor<8xi32>, tensor<i32>) -> tensor<i32>
// CHECK-NEXT:    return %[[S]] : tensor<i32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<8xi64>) -> tensor<i64> {
  %z = stablehlo.constant dense<0> : tensor<i64>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<8xi64>, tensor<i64>) -> tensor<i64>
  return %s : tensor<i64>
}

// -----

// Up to 10**9 each may pass 2**31: refused when strict.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=0:1000000000 2> %t.err; test $? = 2
// RUN: test ! -e %t.mlir && test "$(wc -l < %t.err)" = 1
// RUN: filecheck %s --check-prefix=ERR --input-file %t.err
// ERR: no64: error: stablehlo.reduce at {{.*}}reduce_sum.mlir:27:24: a 64-bit integer in [0, 8000000000] may not fit in 32 bits (unproven; refused by policy 'strict')
func.func public @main(%x: tensor<8xi64>) -> tensor<i64> {
  %z = stablehlo.constant dense<0> : tensor<i64>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<8xi64>, tensor<i64>) -> tensor<i64>
  return %s : tensor<i64>
}
