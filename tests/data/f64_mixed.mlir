// A small 64-bit program: f64 arithmetic and an i64 counter.
module @f64_mixed {
  func.func public @main(%x: tensor<4xf64>, %n: tensor<i64>) -> (tensor<4xf64>, tensor<i64>) {
    %two = stablehlo.constant dense<2.000000e+00> : tensor<4xf64>
    %y = stablehlo.multiply %x, %two : tensor<4xf64>
    %one = stablehlo.constant dense<1> : tensor<i64>
    %m = stablehlo.add %n, %one : tensor<i64>
    return %y, %m : tensor<4xf64>, tensor<i64>
  }
}
