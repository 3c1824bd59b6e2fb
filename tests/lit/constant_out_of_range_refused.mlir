// An i64 constant that is neither in the 32-bit range nor a sentinel.
// EXPECT-REFUSED: ConstantRangeError: 5000000000
func.func public @main(%n: tensor<i64>) -> tensor<i64> {
  %big = stablehlo.constant dense<5000000000> : tensor<i64>
  %m = stablehlo.add %n, %big : tensor<i64>
  return %m : tensor<i64>
}
