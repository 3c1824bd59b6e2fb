// Index arithmetic on a declared input: proven exact, every i64 becomes i32.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=-1000:1000 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 5
// CHECK-LABEL: func.func public @main(%arg0: tensor<8xi32>
// CHECK-SAME:    -> tensor<8xi32> {
// CHECK-NEXT:    %[[I:.*]] = stablehlo.iota dim = 0 : tensor<8xi32>
// CHECK-NEXT:    %[[S:.*]] = stablehlo.add %[[I]], %arg0 : tensor<8xi32>
// CHECK-NEXT:    %[[C:.*]] = stablehlo.constant dense<1000> : tensor<8xi32>
// CHECK-NEXT:    %[[M:.*]] = stablehlo.multiply %[[S]], %[[C]] : tensor<8xi32>
// CHECK-NEXT:    return %[[M]] : tensor<8xi32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<8xi64>) -> tensor<8xi64> {
  %i = stablehlo.iota dim = 0 : tensor<8xi64>
  %s = stablehlo.add %i, %x : tensor<8xi64>
  %c = stablehlo.constant dense<1000> : tensor<8xi64>
  %m = stablehlo.multiply %s, %c : tensor<8xi64>
  return %m : tensor<8xi64>
}
