// Index arithmetic on a declared input: proven exact, every i64 becomes i32.
// RANGE: 0=-1000:1000
// POLICY: strict
// CHECK: func.func public @main(%arg0: tensor<8xi32>) -> tensor<8xi32>
// CHECK: stablehlo.iota dim = 0 : tensor<8xi32>
// CHECK: stablehlo.add
// CHECK: stablehlo.multiply
// CHECK-NOT: i64>
func.func public @main(%x: tensor<8xi64>) -> tensor<8xi64> {
  %i = stablehlo.iota dim = 0 : tensor<8xi64>
  %s = stablehlo.add %i, %x : tensor<8xi64>
  %c = stablehlo.constant dense<1000> : tensor<8xi64>
  %m = stablehlo.multiply %s, %c : tensor<8xi64>
  return %m : tensor<8xi64>
}
