// 64-bit integer constants: outside the 32-bit range, sentinels, and
// products of constants.

// A constant that is neither in the 32-bit range nor a sentinel enters the
// add as its exact words (5000000000 = 1 * 2**32 + 705032704).
// RUN: no64 convert %s -o %t.mlir --range 0=-2147483648:2147483647 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 1, emulated 1
// CHECK-LABEL: func.func public @main(%arg0: tensor<i32>
// CHECK-SAME:    -> tensor<2xi32> {
// CHECK:         %[[KLO:.*]] = stablehlo.constant dense<705032704> : tensor<ui32>
// CHECK-NEXT:    %[[KHI:.*]] = stablehlo.constant dense<1> : tensor<ui32>
// CHECK-NEXT:    %[[LO:.*]] = stablehlo.add %[[XL:.*]], %[[KLO]] : tensor<ui32>
// CHECK-NEXT:    %[[LT:.*]] = stablehlo.compare LT, %[[LO]], %[[XL]], UNSIGNED
// CHECK-NEXT:    %[[CARRY:.*]] = stablehlo.convert %[[LT]] : (tensor<i1>) -> tensor<ui32>
// CHECK-NEXT:    %[[H:.*]] = stablehlo.add %{{.*}}, %[[KHI]] : tensor<ui32>
// CHECK-NEXT:    %[[HI:.*]] = stablehlo.add %[[H]], %[[CARRY]] : tensor<ui32>
// CHECK:         stablehlo.select {{.*}} : tensor<2xi1>, tensor<2xi32>
// CHECK-NOT:     i64>
func.func public @main(%n: tensor<i64>) -> tensor<i64> {
  %big = stablehlo.constant dense<5000000000> : tensor<i64>
  %m = stablehlo.add %n, %big : tensor<i64>
  return %m : tensor<i64>
}

// -----

// A product of constants that never fits in 32 bits: refused by the default policy.
// RUN: no64 convert %s -o %t.mlir 2> %t.err; test $? = 2
// RUN: test ! -e %t.mlir && test "$(wc -l < %t.err)" = 1
// RUN: filecheck %s --check-prefix=ERR --input-file %t.err
// ERR: no64: error: stablehlo.multiply at {{.*}}constants.mlir:35:8: a 64-bit integer in [10000000000, 10000000000] is certain to leave the 32-bit range (overflow; refused by policy 'default')
func.func public @main() -> tensor<i64> {
  %c = stablehlo.constant dense<100000> : tensor<i64>
  %m = stablehlo.multiply %c, %c : tensor<i64>
  return %m : tensor<i64>
}

// -----

// A masked minimum and maximum: INT64_MAX (the identity of min) becomes
// INT32_MAX, and INT64_MIN (the identity of max) becomes INT32_MIN.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=-100:100 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 1, sentinel 14
// CHECK-LABEL: func.func public @main(%arg0: tensor<6xi32>
// CHECK-NEXT:    %[[MAX:.*]] = stablehlo.constant dense<2147483647> : tensor<i32>
// CHECK-NEXT:    %[[MIN:.*]] = stablehlo.constant dense<-2147483648> : tensor<i32>
// CHECK:         stablehlo.reduce(%{{.*}} init: %[[MAX]]) applies stablehlo.minimum across dimensions = [0] : (tensor<6xi32>, tensor<i32>) -> tensor<i32>
// CHECK-NEXT:    stablehlo.reduce(%{{.*}} init: %[[MIN]]) applies stablehlo.maximum across dimensions = [0] : (tensor<6xi32>, tensor<i32>) -> tensor<i32>
// CHECK-NOT:     i64>
// CHECK-NOT:     9223372036854775807
func.func public @main(%x: tensor<6xi64>, %mask: tensor<6xi1>) -> (tensor<i64>, tensor<i64>) {
  %big = stablehlo.constant dense<9223372036854775807> : tensor<i64>
  %small = stablehlo.constant dense<-9223372036854775808> : tensor<i64>
  %bigs = stablehlo.broadcast_in_dim %big, dims = [] : (tensor<i64>) -> tensor<6xi64>
  %smalls = stablehlo.broadcast_in_dim %small, dims = [] : (tensor<i64>) -> tensor<6xi64>
  %a = stablehlo.select %mask, %x, %bigs : tensor<6xi1>, tensor<6xi64>
  %b = stablehlo.select %mask, %x, %smalls : tensor<6xi1>, tensor<6xi64>
  %mn = stablehlo.reduce(%a init: %big) applies stablehlo.minimum across dimensions = [0] : (tensor<6xi64>, tensor<i64>) -> tensor<i64>
  %mx = stablehlo.reduce(%b init: %small) applies stablehlo.maximum across dimensions = [0] : (tensor<6xi64>, tensor<i64>) -> tensor<i64>
  return %mn, %mx : tensor<i64>, tensor<i64>
}
