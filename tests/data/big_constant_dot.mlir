// An i64 constant that does not fit in 32 bits, read by an op that no64
// cannot compute in 32-bit words (a dot product).
module @big_constant_dot {
  func.func public @main(%n: tensor<2xi64>) -> tensor<i64> {
    %big = stablehlo.constant dense<5000000000> : tensor<2xi64>
    %m = stablehlo.dot_general %n, %big, contracting_dims = [0] x [0] : (tensor<2xi64>, tensor<2xi64>) -> tensor<i64>
    return %m : tensor<i64>
  }
}
