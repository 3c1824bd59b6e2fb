// A counted loop (10 trips) adding a bounded input to an accumulator.
// RANGE: 0=-1000:1000
// POLICY: strict
// CHECK: stablehlo.while
// CHECK: tensor<i32>, tensor<i32>, tensor<i32>
// CHECK-NOT: i64>
func.func public @main(%x: tensor<i64>) -> (tensor<i64>, tensor<i64>) {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %r:3 = stablehlo.while(%i = %zero, %acc = %zero, %v = %x) : tensor<i64>, tensor<i64>, tensor<i64>
   cond {
    %n = stablehlo.constant dense<10> : tensor<i64>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i64>
    %i1 = stablehlo.add %i, %one : tensor<i64>
    %a1 = stablehlo.add %acc, %v : tensor<i64>
    stablehlo.return %i1, %a1, %v : tensor<i64>, tensor<i64>, tensor<i64>
  }
  return %r#0, %r#1 : tensor<i64>, tensor<i64>
}
