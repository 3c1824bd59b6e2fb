// bitcast_convert reinterprets the 64 bits of a value: never narrowed.
// EXPECT-REFUSED: UnsupportedOpError: bitcast_convert reinterprets the bits
func.func public @main(%x: tensor<4xf64>) -> tensor<4xi64> {
  %b = stablehlo.bitcast_convert %x : (tensor<4xf64>) -> tensor<4xi64>
  return %b : tensor<4xi64>
}
