// A sum of 8 elements of at most 10**8: below 2**31.
// RANGE: 0=-100000000:100000000
// POLICY: strict
// CHECK: stablehlo.reduce
// CHECK-NOT: i64>
func.func public @main(%x: tensor<8xi64>) -> tensor<i64> {
  %z = stablehlo.constant dense<0> : tensor<i64>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<8xi64>, tensor<i64>) -> tensor<i64>
  return %s : tensor<i64>
}
