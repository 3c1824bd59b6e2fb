// Shifts by constants below 32 of values whose results fit: exact.
// RANGE: 0=-1000:1000
// POLICY: strict
// CHECK: stablehlo.shift_left
// CHECK: stablehlo.shift_right_arithmetic
// CHECK-NOT: i64>
func.func public @main(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %c = stablehlo.constant dense<20> : tensor<4xi64>
  %l = stablehlo.shift_left %x, %c : tensor<4xi64>
  %c3 = stablehlo.constant dense<3> : tensor<4xi64>
  %r = stablehlo.shift_right_arithmetic %x, %c3 : tensor<4xi64>
  return %l, %r : tensor<4xi64>, tensor<4xi64>
}
