// An i64 constant that does not fit in 32 bits, read by an integer power
// (a test takes its word rule out of the op table: then no64 cannot compute it).
module @big_constant_power {
  func.func public @main(%n: tensor<2xi64>) -> tensor<2xi64> {
    %big = stablehlo.constant dense<5000000000> : tensor<2xi64>
    %m = stablehlo.power %n, %big : tensor<2xi64>
    return %m : tensor<2xi64>
  }
}
