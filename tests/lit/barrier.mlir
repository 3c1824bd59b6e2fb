// optimization_barrier: each result is its own operand, narrowed or
// emulated on its own.

// A variadic barrier whose operands are all exact.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=0:1000 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 7
// CHECK-LABEL: func.func public @main(%arg0: tensor<4xi32>
// CHECK-SAME:    -> tensor<4xi32> {
// CHECK-NEXT:    %[[I:.*]] = stablehlo.iota dim = 0 : tensor<4xi32>
// CHECK-NEXT:    %[[B:.*]]:2 = stablehlo.optimization_barrier %arg0, %[[I]] : tensor<4xi32>, tensor<4xi32>
// CHECK-NEXT:    %[[K:.*]] = stablehlo.constant dense<1000> : tensor<4xi32>
// CHECK-NEXT:    %[[M:.*]] = stablehlo.multiply %[[B]]#0, %[[K]] : tensor<4xi32>
// CHECK-NEXT:    %[[S:.*]] = stablehlo.add %[[M]], %[[B]]#1 : tensor<4xi32>
// CHECK-NEXT:    return %[[S]] : tensor<4xi32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %i = stablehlo.iota dim = 0 : tensor<4xi64>
  %b:2 = stablehlo.optimization_barrier %x, %i : tensor<4xi64>, tensor<4xi64>
  %k = stablehlo.constant dense<1000> : tensor<4xi64>
  %z = stablehlo.multiply %b#0, %k : tensor<4xi64>
  %w = stablehlo.add %z, %b#1 : tensor<4xi64>
  return %w : tensor<4xi64>
}

// -----

// The second result of a barrier is its second operand, not its first:
// x * 100000 reaches 10**10 and is refused under the strict policy.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=0:100000 2> %t.err; test $? = 2
// RUN: test ! -e %t.mlir && test "$(wc -l < %t.err)" = 1
// RUN: filecheck %s --check-prefix=ERR --input-file %t.err
// ERR: no64: error: stablehlo.multiply at {{.*}}barrier.mlir:38:8: a 64-bit integer in [0, 10000000000] may not fit in 32 bits (unproven; refused by policy 'strict')
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %i = stablehlo.iota dim = 0 : tensor<4xi64>
  %b:2 = stablehlo.optimization_barrier %i, %x : tensor<4xi64>, tensor<4xi64>
  %k = stablehlo.constant dense<100000> : tensor<4xi64>
  %z = stablehlo.multiply %b#1, %k : tensor<4xi64>
  return %z : tensor<4xi64>
}

// -----

// The amount of this shift is the barrier's second operand (up to 33), not
// the constant 3 beside it: the shift cannot be shown to stay below 32, so
// it is computed in 32-bit words, by the barrier's result, and comes back as
// (low, high).
// RUN: no64 convert %s -o %t.mlir --range 0=-1:-1 --range 1=0:33 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 5, emulated 1
// CHECK-LABEL: func.func public @main(%arg0: tensor<i32>
// CHECK-SAME:    -> tensor<2xi32> {
// CHECK:         %[[B:.*]]:2 = stablehlo.optimization_barrier %{{.*}}, %arg1 : tensor<i32>, tensor<i32>
// CHECK:         stablehlo.bitcast_convert %[[B]]#1 : (tensor<i32>) -> tensor<ui32>
// CHECK:         stablehlo.shift_left
// CHECK:         stablehlo.select {{.*}} : tensor<2xi1>, tensor<2xi32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<i64>, %n: tensor<i64>) -> tensor<i64> {
  %c = stablehlo.constant dense<3> : tensor<i64>
  %b:2 = stablehlo.optimization_barrier %c, %n : tensor<i64>, tensor<i64>
  %z = stablehlo.shift_left %x, %b#1 : tensor<i64>
  return %z : tensor<i64>
}
