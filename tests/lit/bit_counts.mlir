// Bit counts of 64-bit values over the whole int32 range, rewritten on the
// 32-bit value: the 32 extra copies of the sign bit corrected for.

// count_leading_zeros: + 32 for non-negative values.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=-2147483648:2147483647 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 2
// CHECK-LABEL: func.func public @main(%arg0: tensor<8xi32>
// CHECK-NEXT:    %[[N:.*]] = stablehlo.count_leading_zeros %arg0 : tensor<8xi32>
// CHECK-NEXT:    %[[C32:.*]] = stablehlo.constant dense<32> : tensor<8xi32>
// CHECK-NEXT:    %[[N32:.*]] = stablehlo.add %[[N]], %[[C32]] : tensor<8xi32>
// CHECK-NEXT:    %[[ZERO:.*]] = stablehlo.constant dense<0> : tensor<8xi32>
// CHECK-NEXT:    %[[NEG:.*]] = stablehlo.compare LT, %arg0, %[[ZERO]], SIGNED
// CHECK-NEXT:    %[[R:.*]] = stablehlo.select %[[NEG]], %[[N]], %[[N32]] : tensor<8xi1>, tensor<8xi32>
// CHECK-NEXT:    return %[[R]] : tensor<8xi32>
func.func public @main(%x: tensor<8xi64>) -> tensor<8xi64> {
  %c = stablehlo.count_leading_zeros %x : tensor<8xi64>
  return %c : tensor<8xi64>
}

// -----

// popcnt: + 32 for negative values.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=-2147483648:2147483647 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 2
// CHECK-LABEL: func.func public @main(%arg0: tensor<8xi32>
// CHECK-NEXT:    %[[N:.*]] = stablehlo.popcnt %arg0 : tensor<8xi32>
// CHECK-NEXT:    %[[C32:.*]] = stablehlo.constant dense<32> : tensor<8xi32>
// CHECK-NEXT:    %[[N32:.*]] = stablehlo.add %[[N]], %[[C32]] : tensor<8xi32>
// CHECK-NEXT:    %[[ZERO:.*]] = stablehlo.constant dense<0> : tensor<8xi32>
// CHECK-NEXT:    %[[NEG:.*]] = stablehlo.compare LT, %arg0, %[[ZERO]], SIGNED
// CHECK-NEXT:    %[[R:.*]] = stablehlo.select %[[NEG]], %[[N32]], %[[N]] : tensor<8xi1>, tensor<8xi32>
// CHECK-NEXT:    return %[[R]] : tensor<8xi32>
func.func public @main(%x: tensor<8xi64>) -> tensor<8xi64> {
  %c = stablehlo.popcnt %x : tensor<8xi64>
  return %c : tensor<8xi64>
}
