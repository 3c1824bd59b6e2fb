// A sum of 8 elements of up to 10**9 may pass 2**31: refused when strict.
// RANGE: 0=0:1000000000
// POLICY: strict
// EXPECT-REFUSED: NarrowingError: may not fit in 32 bits
func.func public @main(%x: tensor<8xi64>) -> tensor<i64> {
  %z = stablehlo.constant dense<0> : tensor<i64>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<8xi64>, tensor<i64>) -> tensor<i64>
  return %s : tensor<i64>
}
