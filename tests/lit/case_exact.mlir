// A case with two results per branch, each branch bounded.
// RANGE: 0=0:2, 1=-1000:1000
// POLICY: strict
// CHECK: stablehlo.case
// CHECK-NOT: i64>
func.func public @main(%k: tensor<i32>, %x: tensor<i64>) -> (tensor<i64>, tensor<i64>) {
  %r:2 = "stablehlo.case"(%k) ({
    %c = stablehlo.constant dense<7> : tensor<i64>
    %a = stablehlo.add %x, %c : tensor<i64>
    stablehlo.return %a, %x : tensor<i64>, tensor<i64>
  }, {
    %c = stablehlo.constant dense<1000> : tensor<i64>
    %m = stablehlo.multiply %x, %c : tensor<i64>
    stablehlo.return %x, %m : tensor<i64>, tensor<i64>
  }) : (tensor<i32>) -> (tensor<i64>, tensor<i64>)
  return %r#0, %r#1 : tensor<i64>, tensor<i64>
}
