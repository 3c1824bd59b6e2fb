// count_leading_zeros of a 64-bit value over the whole int32 range: the
// 32-bit count is corrected for the 32 leading copies of the sign bit.
// POLICY: strict
// RANGE: 0=-2147483648:2147483647
// CHECK: stablehlo.count_leading_zeros
// CHECK-NOT: i64>
func.func public @main(%x: tensor<8xi64>) -> tensor<8xi64> {
  %c = stablehlo.count_leading_zeros %x : tensor<8xi64>
  return %c : tensor<8xi64>
}
