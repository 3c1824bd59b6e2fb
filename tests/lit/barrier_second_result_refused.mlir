// The second result of a barrier is its second operand, not its first:
// x * 100000 reaches 10**10 and must be refused under the strict policy.
// RANGE: 0=0:100000
// POLICY: strict
// EXPECT-REFUSED: NarrowingError: may not fit in 32 bits
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %i = stablehlo.iota dim = 0 : tensor<4xi64>
  %b:2 = stablehlo.optimization_barrier %i, %x : tensor<4xi64>, tensor<4xi64>
  %k = stablehlo.constant dense<100000> : tensor<4xi64>
  %z = stablehlo.multiply %b#1, %k : tensor<4xi64>
  return %z : tensor<4xi64>
}
