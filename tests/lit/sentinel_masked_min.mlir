// A masked minimum: INT64_MAX (the identity of min) becomes INT32_MAX, and
// INT64_MIN (the identity of max) becomes INT32_MIN.
// RANGE: 0=-100:100
// POLICY: strict
// CHECK: dense<2147483647> : tensor<i32>
// CHECK: dense<-2147483648> : tensor<i32>
// CHECK-NOT: i64>
// CHECK-NOT: 9223372036854775807
func.func public @main(%x: tensor<6xi64>, %mask: tensor<6xi1>) -> (tensor<i64>, tensor<i64>) {
  %big = stablehlo.constant dense<9223372036854775807> : tensor<i64>
  %small = stablehlo.constant dense<-9223372036854775808> : tensor<i64>
  %bigs = stablehlo.broadcast_in_dim %big, dims = [] : (tensor<i64>) -> tensor<6xi64>
  %smalls = stablehlo.broadcast_in_dim %small, dims = [] : (tensor<i64>) -> tensor<6xi64>
  %a = stablehlo.select %mask, %x, %bigs : tensor<6xi1>, tensor<6xi64>
  %b = stablehlo.select %mask, %x, %smalls : tensor<6xi1>, tensor<6xi64>
  %mn = stablehlo.reduce(%a init: %big) applies stablehlo.minimum across dimensions = [0] : (tensor<6xi64>, tensor<i64>) -> tensor<i64>
  %mx = stablehlo.reduce(%b init: %small) applies stablehlo.maximum across dimensions = [0] : (tensor<6xi64>, tensor<i64>) -> tensor<i64>
  return %mn, %mx : tensor<i64>, tensor<i64>
}
