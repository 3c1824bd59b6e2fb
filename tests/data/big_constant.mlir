// An i64 constant that does not fit in 32 bits (and is no sentinel).
module @big_constant {
  func.func public @main(%n: tensor<i64>) -> tensor<i64> {
    %big = stablehlo.constant dense<5000000000> : tensor<i64>
    %m = stablehlo.add %n, %big : tensor<i64>
    return %m : tensor<i64>
  }
}
