// popcnt of a 64-bit value over the whole int32 range: negative values have
// 32 more one bits in 64 bits than in 32.
// POLICY: strict
// RANGE: 0=-2147483648:2147483647
// CHECK: stablehlo.popcnt
// CHECK-NOT: i64>
func.func public @main(%x: tensor<8xi64>) -> tensor<8xi64> {
  %c = stablehlo.popcnt %x : tensor<8xi64>
  return %c : tensor<8xi64>
}
