// An argsort: keys sorted with an iota payload; both results exact.
// RANGE: 0=-2147483648:2147483647
// POLICY: strict
// CHECK: "stablehlo.sort"
// CHECK-NOT: i64>
func.func public @main(%x: tensor<8xi64>) -> (tensor<8xi64>, tensor<8xi64>) {
  %i = stablehlo.iota dim = 0 : tensor<8xi64>
  %r:2 = "stablehlo.sort"(%x, %i) ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>, %c: tensor<i64>, %d: tensor<i64>):
    %p = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }) {dimension = 0 : i64, is_stable = true} : (tensor<8xi64>, tensor<8xi64>) -> (tensor<8xi64>, tensor<8xi64>)
  return %r#0, %r#1 : tensor<8xi64>, tensor<8xi64>
}
