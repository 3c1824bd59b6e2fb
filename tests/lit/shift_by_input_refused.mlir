// A 64-bit shift by an amount that is not a constant may reach 32.
// RANGE: 0=0:7, 1=0:40
// EXPECT-REFUSED: UnsupportedOpError: cannot be shown to stay below 32
func.func public @main(%x: tensor<4xi64>, %n: tensor<4xi64>) -> tensor<4xi64> {
  %s = stablehlo.shift_right_logical %x, %n : tensor<4xi64>
  return %s : tensor<4xi64>
}
