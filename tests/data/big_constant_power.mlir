// An i64 constant that does not fit in 32 bits, read by an op that no64
// cannot compute in 32-bit words (an integer power).
module @big_constant_power {
  func.func public @main(%n: tensor<2xi64>) -> tensor<2xi64> {
    %big = stablehlo.constant dense<5000000000> : tensor<2xi64>
    %m = stablehlo.power %n, %big : tensor<2xi64>
    return %m : tensor<2xi64>
  }
}
