// A private function returning two values, each bounded through the call.
// RANGE: 0=-1000:1000
// POLICY: strict
// CHECK: func.func private @pair(%arg0: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>)
// CHECK-NOT: i64>
func.func public @main(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %r:2 = func.call @pair(%x) : (tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>)
  return %r#0, %r#1 : tensor<4xi64>, tensor<4xi64>
}
func.func private @pair(%a: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %c = stablehlo.constant dense<1000000> : tensor<4xi64>
  %m = stablehlo.multiply %a, %c : tensor<4xi64>
  %n = stablehlo.negate %a : tensor<4xi64>
  return %n, %m : tensor<4xi64>, tensor<4xi64>
}
