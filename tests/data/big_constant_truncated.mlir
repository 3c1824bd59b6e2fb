// An i64 constant that does not fit in 32 bits, converted straight to i32
// (the truncation JAX writes when it lowers a 64-bit array with x64 off).
module @big_constant_truncated {
  func.func public @main(%n: tensor<2xi32>) -> tensor<2xi32> {
    %big = stablehlo.constant dense<5000000000> : tensor<2xi64>
    %t = stablehlo.convert %big : (tensor<2xi64>) -> tensor<2xi32>
    %m = stablehlo.add %n, %t : tensor<2xi32>
    return %m : tensor<2xi32>
  }
}
