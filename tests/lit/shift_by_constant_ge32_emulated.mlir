// A 64-bit shift by 33 moves bits across the 32-bit boundary: emulated.
// RANGE: 0=0:7
// CHECK: -> tensor<4x2xi32>
// CHECK-NOT: i64>
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %c = stablehlo.constant dense<33> : tensor<4xi64>
  %s = stablehlo.shift_left %x, %c : tensor<4xi64>
  return %s : tensor<4xi64>
}
