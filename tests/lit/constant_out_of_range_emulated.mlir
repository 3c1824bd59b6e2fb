// An i64 constant that is neither in the 32-bit range nor a sentinel: it
// enters the add as its exact words (5000000000 = 1 * 2**32 + 705032704).
// RANGE: 0=-2147483648:2147483647
// CHECK: dense<705032704>
// CHECK: -> tensor<2xi32>
// CHECK-NOT: i64>
func.func public @main(%n: tensor<i64>) -> tensor<i64> {
  %big = stablehlo.constant dense<5000000000> : tensor<i64>
  %m = stablehlo.add %n, %big : tensor<i64>
  return %m : tensor<i64>
}
