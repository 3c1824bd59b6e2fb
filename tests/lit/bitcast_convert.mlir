// bitcast_convert of 64-bit integers.

// To a 64-bit float it reinterprets the bits: never narrowed.
// RUN: no64 convert %s -o %t.mlir 2> %t.err; test $? = 2
// RUN: test ! -e %t.mlir && test "$(wc -l < %t.err)" = 1
// RUN: filecheck %s --check-prefix=ERR --input-file %t.err
// ERR: no64: error: stablehlo.bitcast_convert at {{.*}}bitcast_convert.mlir:9:8: bitcast_convert reinterprets the bits of a 64-bit value
func.func public @main(%x: tensor<4xf64>) -> tensor<4xi64> {
  %b = stablehlo.bitcast_convert %x : (tensor<4xf64>) -> tensor<4xi64>
  return %b : tensor<4xi64>
}

// -----

// To its two 32-bit words (low first, as XLA lays them out): the words of
// the narrowed input, its sign as the high word, under every policy.
// RUN: no64 convert %s -o %t.mlir --range 0=-2147483648:2147483647 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 1
// CHECK-LABEL: func.func public @main(%arg0: tensor<4xi32>
// CHECK-SAME:    -> tensor<4x2xi32> {
// CHECK-NEXT:    %[[C31:.*]] = stablehlo.constant dense<31> : tensor<4xi32>
// CHECK-NEXT:    %[[S:.*]] = stablehlo.shift_right_arithmetic %arg0, %[[C31]] : tensor<4xi32>
// CHECK-NEXT:    %[[HI:.*]] = stablehlo.bitcast_convert %[[S]] : (tensor<4xi32>) -> tensor<4xui32>
// CHECK-NEXT:    %[[LO:.*]] = stablehlo.bitcast_convert %arg0 : (tensor<4xi32>) -> tensor<4xui32>
// CHECK-NEXT:    %[[LO2:.*]] = stablehlo.broadcast_in_dim %[[LO]], dims = [1] : (tensor<4xui32>) -> tensor<2x4xui32>
// CHECK-NEXT:    %[[HI2:.*]] = stablehlo.broadcast_in_dim %[[HI]], dims = [1] : (tensor<4xui32>) -> tensor<2x4xui32>
// CHECK-NEXT:    %[[K:.*]] = stablehlo.iota dim = 0 : tensor<2x4xi32>
// CHECK-NEXT:    %[[ZERO:.*]] = stablehlo.constant dense<0> : tensor<2x4xi32>
// CHECK-NEXT:    %[[IS_LO:.*]] = stablehlo.compare EQ, %[[K]], %[[ZERO]], SIGNED : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi1>
// CHECK-NEXT:    %[[SEL:.*]] = stablehlo.select %[[IS_LO]], %[[LO2]], %[[HI2]] : tensor<2x4xi1>, tensor<2x4xui32>
// CHECK-NEXT:    %[[W:.*]] = stablehlo.transpose %[[SEL]], dims = [1, 0] : (tensor<2x4xui32>) -> tensor<4x2xui32>
// CHECK-NEXT:    %[[R:.*]] = stablehlo.bitcast_convert %[[W]] : (tensor<4x2xui32>) -> tensor<4x2xi32>
// CHECK-NEXT:    return %[[R]] : tensor<4x2xi32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<4xi64>) -> tensor<4x2xi32> {
  %b = stablehlo.bitcast_convert %x : (tensor<4xi64>) -> tensor<4x2xi32>
  return %b : tensor<4x2xi32>
}
