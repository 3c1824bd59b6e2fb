// A product of constants that never fits in 32 bits: refused by the default policy.
// EXPECT-REFUSED: NarrowingError: certain to leave the 32-bit range
func.func public @main() -> tensor<i64> {
  %c = stablehlo.constant dense<100000> : tensor<i64>
  %m = stablehlo.multiply %c, %c : tensor<i64>
  return %m : tensor<i64>
}
