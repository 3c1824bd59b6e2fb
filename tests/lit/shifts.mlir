// 64-bit shifts: narrowed when the amount stays below 32 and the result
// fits, else computed in 32-bit words under every policy.

// Shifts by constants below 32 of values whose results fit: exact.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=-1000:1000 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 5
// CHECK-LABEL: func.func public @main(%arg0: tensor<4xi32>
// CHECK-NEXT:    %[[C20:.*]] = stablehlo.constant dense<20> : tensor<4xi32>
// CHECK-NEXT:    %[[L:.*]] = stablehlo.shift_left %arg0, %[[C20]] : tensor<4xi32>
// CHECK-NEXT:    %[[C3:.*]] = stablehlo.constant dense<3> : tensor<4xi32>
// CHECK-NEXT:    %[[R:.*]] = stablehlo.shift_right_arithmetic %arg0, %[[C3]] : tensor<4xi32>
// CHECK-NEXT:    return %[[L]], %[[R]] : tensor<4xi32>, tensor<4xi32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %c = stablehlo.constant dense<20> : tensor<4xi64>
  %l = stablehlo.shift_left %x, %c : tensor<4xi64>
  %c3 = stablehlo.constant dense<3> : tensor<4xi64>
  %r = stablehlo.shift_right_arithmetic %x, %c3 : tensor<4xi64>
  return %l, %r : tensor<4xi64>, tensor<4xi64>
}

// -----

// A shift left by 33 moves every bit across the word boundary: the low
// word becomes 0 and the high word the low word shifted by 1.  The amount is
// a constant, so the word shift's clamps and choices are computed while the
// op is written (no64.ir.fold) and only the shift that moves bits is left.
// RUN: no64 convert %s -o %t.mlir --range 0=0:7 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 1, emulated 1
// CHECK-LABEL: func.func public @main(%arg0: tensor<4xi32>
// CHECK-SAME:    -> tensor<4x2xi32> {
// CHECK-NEXT:    %[[XL:.*]] = stablehlo.bitcast_convert %arg0 : (tensor<4xi32>) -> tensor<4xui32>
// CHECK-NEXT:    %[[ONE:.*]] = stablehlo.constant dense<1> : tensor<4xui32>
// CHECK-NEXT:    %[[HI:.*]] = stablehlo.shift_left %[[XL]], %[[ONE]] : tensor<4xui32>
// CHECK-NEXT:    %[[LO:.*]] = stablehlo.constant dense<0> : tensor<4xi32>
// CHECK-NEXT:    %[[HI32:.*]] = stablehlo.bitcast_convert %[[HI]] : (tensor<4xui32>) -> tensor<4xi32>
// CHECK-NEXT:    stablehlo.broadcast_in_dim %[[LO]], dims = [1]
// CHECK-NEXT:    stablehlo.broadcast_in_dim %[[HI32]], dims = [1]
// CHECK-NOT:     stablehlo.minimum
// CHECK:         stablehlo.select {{.*}} : tensor<2x4xi1>, tensor<2x4xi32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %c = stablehlo.constant dense<33> : tensor<4xi64>
  %s = stablehlo.shift_left %x, %c : tensor<4xi64>
  return %s : tensor<4xi64>
}

// -----

// A shift left by an amount that may be 32 or more.  The word shift clamps
// the amount to 64, then, for an amount n >= 32, the low word becomes 0 and
// the high word the low word shifted by n - 32; below 32 the high word takes
// the bits shifted out of the low word.
// RUN: no64 convert %s -o %t.mlir --range 0=0:7 --range 1=0:40 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 2, emulated 1
// CHECK-LABEL: func.func public @main(%arg0: tensor<4xi32>
// CHECK-SAME:    -> tensor<4x2xi32> {
// CHECK:         %[[C64:.*]] = stablehlo.constant dense<64> : tensor<4xui32>
// CHECK-NEXT:    %[[NMIN:.*]] = stablehlo.minimum %{{.*}}, %[[C64]] : tensor<4xui32>
// CHECK-NEXT:    %[[AMT:.*]] = stablehlo.select %{{.*}}, %[[C64]], %[[NMIN]] : tensor<4xi1>, tensor<4xui32>
// CHECK-NEXT:    %[[C32:.*]] = stablehlo.constant dense<32> : tensor<4xui32>
// CHECK-NEXT:    %[[FAR:.*]] = stablehlo.compare GE, %[[AMT]], %[[C32]], UNSIGNED
// CHECK-NEXT:    %[[AMT_32:.*]] = stablehlo.subtract %[[AMT]], %[[C32]] : tensor<4xui32>
// CHECK-NEXT:    %[[BACK:.*]] = stablehlo.subtract %[[C32]], %[[AMT]] : tensor<4xui32>
// CHECK-NEXT:    %[[LO_NEAR:.*]] = stablehlo.shift_left %[[XL:.*]], %[[AMT]] : tensor<4xui32>
// CHECK-NEXT:    %[[HI_UP:.*]] = stablehlo.shift_left %[[XH:.*]], %[[AMT]] : tensor<4xui32>
// CHECK-NEXT:    %[[CARRIED:.*]] = stablehlo.shift_right_logical %[[XL]], %[[BACK]] : tensor<4xui32>
// CHECK-NEXT:    %[[HI_NEAR:.*]] = stablehlo.or %[[HI_UP]], %[[CARRIED]] : tensor<4xui32>
// CHECK-NEXT:    %[[HI_FAR:.*]] = stablehlo.shift_left %[[XL]], %[[AMT_32]] : tensor<4xui32>
// CHECK-NEXT:    %[[ZERO:.*]] = stablehlo.constant dense<0> : tensor<4xui32>
// CHECK-NEXT:    %[[LO:.*]] = stablehlo.select %[[FAR]], %[[ZERO]], %[[LO_NEAR]] : tensor<4xi1>, tensor<4xui32>
// CHECK-NEXT:    %[[HI:.*]] = stablehlo.select %[[FAR]], %[[HI_FAR]], %[[HI_NEAR]] : tensor<4xi1>, tensor<4xui32>
// CHECK-NEXT:    stablehlo.bitcast_convert %[[LO]] : (tensor<4xui32>) -> tensor<4xi32>
// CHECK:         stablehlo.bitcast_convert %[[HI]] : (tensor<4xui32>) -> tensor<4xi32>
// CHECK:         stablehlo.select {{.*}} : tensor<2x4xi1>, tensor<2x4xi32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<4xi64>, %n: tensor<4xi64>) -> tensor<4xi64> {
  %s = stablehlo.shift_left %x, %n : tensor<4xi64>
  return %s : tensor<4xi64>
}

// -----

// A logical shift right by an input that may reach 32 (and 64): computed in
// words, the amount's own words clamped first (any high bit means >= 64).
// The shifted value 0..7 would fit in 32 bits, but an emulated output comes
// back as its two words.
// RUN: no64 convert %s -o %t.mlir --range 0=0:7 --range 1=0:40 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 2, emulated 1
// CHECK-LABEL: func.func public @main(%arg0: tensor<4xi32>
// CHECK-SAME:    -> tensor<4x2xi32> {
// CHECK:         %[[NS:.*]] = stablehlo.shift_right_arithmetic %arg1, %{{.*}} : tensor<4xi32>
// CHECK-NEXT:    %[[NH:.*]] = stablehlo.bitcast_convert %[[NS]] : (tensor<4xi32>) -> tensor<4xui32>
// CHECK-NEXT:    %[[NL:.*]] = stablehlo.bitcast_convert %arg1 : (tensor<4xi32>) -> tensor<4xui32>
// CHECK-NEXT:    %[[ZERO:.*]] = stablehlo.constant dense<0> : tensor<4xui32>
// CHECK-NEXT:    %[[BIG:.*]] = stablehlo.compare NE, %[[NH]], %[[ZERO]], UNSIGNED
// CHECK-NEXT:    %[[C64:.*]] = stablehlo.constant dense<64> : tensor<4xui32>
// CHECK-NEXT:    %[[NMIN:.*]] = stablehlo.minimum %[[NL]], %[[C64]] : tensor<4xui32>
// CHECK-NEXT:    %[[AMT:.*]] = stablehlo.select %[[BIG]], %[[C64]], %[[NMIN]] : tensor<4xi1>, tensor<4xui32>
// CHECK:         stablehlo.shift_right_logical %{{.*}}, %[[AMT]] : tensor<4xui32>
// CHECK:         stablehlo.select {{.*}} : tensor<2x4xi1>, tensor<2x4xi32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<4xi64>, %n: tensor<4xi64>) -> tensor<4xi64> {
  %s = stablehlo.shift_right_logical %x, %n : tensor<4xi64>
  return %s : tensor<4xi64>
}
