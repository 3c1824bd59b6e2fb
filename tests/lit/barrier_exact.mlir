// A variadic optimization_barrier whose operands are all exact.
// RANGE: 0=0:1000
// POLICY: strict
// CHECK: stablehlo.optimization_barrier
// CHECK: tensor<4xi32>, tensor<4xi32>
// CHECK-NOT: i64>
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %i = stablehlo.iota dim = 0 : tensor<4xi64>
  %b:2 = stablehlo.optimization_barrier %x, %i : tensor<4xi64>, tensor<4xi64>
  %k = stablehlo.constant dense<1000> : tensor<4xi64>
  %z = stablehlo.multiply %b#0, %k : tensor<4xi64>
  %w = stablehlo.add %z, %b#1 : tensor<4xi64>
  return %w : tensor<4xi64>
}
