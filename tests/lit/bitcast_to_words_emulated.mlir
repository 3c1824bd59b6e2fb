// A 64-bit integer bitcast to its two 32-bit words (low first, as XLA
// lays them out): the words of the narrowed input, sign-extended, under
// every policy.
// RANGE: 0=-2147483648:2147483647
// CHECK: -> tensor<4x2xi32>
// CHECK-NOT: i64>
func.func public @main(%x: tensor<4xi64>) -> tensor<4x2xi32> {
  %b = stablehlo.bitcast_convert %x : (tensor<4xi64>) -> tensor<4x2xi32>
  return %b : tensor<4x2xi32>
}
