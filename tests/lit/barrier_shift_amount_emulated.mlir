// The amount of this shift is the barrier's second operand (up to 33), not
// the constant 3 beside it: the shift cannot be shown to stay below 32, so
// it is computed exactly in 32-bit words and comes back as (low, high).
// RANGE: 0=-1:-1, 1=0:33
// CHECK: -> tensor<2xi32>
// CHECK-NOT: i64>
func.func public @main(%x: tensor<i64>, %n: tensor<i64>) -> tensor<i64> {
  %c = stablehlo.constant dense<3> : tensor<i64>
  %b:2 = stablehlo.optimization_barrier %c, %n : tensor<i64>, tensor<i64>
  %z = stablehlo.shift_left %x, %b#1 : tensor<i64>
  return %z : tensor<i64>
}
