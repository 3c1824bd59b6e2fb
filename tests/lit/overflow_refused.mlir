// A product of constants that never fits in 32 bits: refused by the default policy.
// EXPECT-REFUSED: NarrowingError: never fits
func.func public @main() -> tensor<i64> {
  %c = stablehlo.constant dense<100000> : tensor<i64>
  %m = stablehlo.multiply %c, %c : tensor<i64>
  return %m : tensor<i64>
}
