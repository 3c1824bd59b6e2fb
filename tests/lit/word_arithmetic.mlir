// Word-pair arithmetic under policy "exact": a 64-bit integer that may not
// fit in 32 bits is computed as two 32-bit words (ui32 low, ui32 high), and
// an output that is such a value comes back as [..., 2] words (low, high).
// The inputs are declared 32-bit values (--range); their words are the value's
// bits (low) and its sign, x >> 31 (high).

// An add with carry: low = xl + yl, carry = low < xl (unsigned), high = xh + yh + carry.
// RUN: no64 convert %s -o %t.mlir --policy exact --range 0=-2147483648:2147483647 --range 1=-2147483648:2147483647 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 2, emulated 1
// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    -> tensor<4x2xi32> {
// CHECK:         %[[XS:.*]] = stablehlo.shift_right_arithmetic %arg0, %{{.*}} : tensor<4xi32>
// CHECK-NEXT:    %[[XH:.*]] = stablehlo.bitcast_convert %[[XS]] : (tensor<4xi32>) -> tensor<4xui32>
// CHECK-NEXT:    %[[XL:.*]] = stablehlo.bitcast_convert %arg0 : (tensor<4xi32>) -> tensor<4xui32>
// CHECK:         %[[YS:.*]] = stablehlo.shift_right_arithmetic %arg1, %{{.*}} : tensor<4xi32>
// CHECK-NEXT:    %[[YH:.*]] = stablehlo.bitcast_convert %[[YS]] : (tensor<4xi32>) -> tensor<4xui32>
// CHECK-NEXT:    %[[YL:.*]] = stablehlo.bitcast_convert %arg1 : (tensor<4xi32>) -> tensor<4xui32>
// CHECK-NEXT:    %[[LO:.*]] = stablehlo.add %[[XL]], %[[YL]] : tensor<4xui32>
// CHECK-NEXT:    %[[LT:.*]] = stablehlo.compare LT, %[[LO]], %[[XL]], UNSIGNED
// CHECK-NEXT:    %[[CARRY:.*]] = stablehlo.convert %[[LT]] : (tensor<4xi1>) -> tensor<4xui32>
// CHECK-NEXT:    %[[H:.*]] = stablehlo.add %[[XH]], %[[YH]] : tensor<4xui32>
// CHECK-NEXT:    %[[HI:.*]] = stablehlo.add %[[H]], %[[CARRY]] : tensor<4xui32>
// CHECK-NEXT:    %[[LO32:.*]] = stablehlo.bitcast_convert %[[LO]] : (tensor<4xui32>) -> tensor<4xi32>
// CHECK-NEXT:    %[[HI32:.*]] = stablehlo.bitcast_convert %[[HI]] : (tensor<4xui32>) -> tensor<4xi32>
// CHECK-NEXT:    %[[LO2:.*]] = stablehlo.broadcast_in_dim %[[LO32]], dims = [1] : (tensor<4xi32>) -> tensor<2x4xi32>
// CHECK-NEXT:    %[[HI2:.*]] = stablehlo.broadcast_in_dim %[[HI32]], dims = [1] : (tensor<4xi32>) -> tensor<2x4xi32>
// CHECK-NEXT:    %[[K:.*]] = stablehlo.iota dim = 0 : tensor<2x4xi32>
// CHECK-NEXT:    %[[ZERO:.*]] = stablehlo.constant dense<0> : tensor<2x4xi32>
// CHECK-NEXT:    %[[IS_LO:.*]] = stablehlo.compare EQ, %[[K]], %[[ZERO]], SIGNED : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi1>
// CHECK-NEXT:    %[[SEL:.*]] = stablehlo.select %[[IS_LO]], %[[LO2]], %[[HI2]] : tensor<2x4xi1>, tensor<2x4xi32>
// CHECK-NEXT:    %[[OUT:.*]] = stablehlo.transpose %[[SEL]], dims = [1, 0] : (tensor<2x4xi32>) -> tensor<4x2xi32>
// CHECK-NEXT:    return %[[OUT]] : tensor<4x2xi32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<4xi64>, %y: tensor<4xi64>) -> tensor<4xi64> {
  %z = stablehlo.add %x, %y : tensor<4xi64>
  return %z : tensor<4xi64>
}

// -----

// A multiply: the low word is the low words' 32-bit product; the high
// word's carry-out of it is summed from the 16-bit halves' four partial
// products (mulhu: two partial sums that cannot overflow, no compare), and
// the cross products xl * yh + xh * yl are added to the high word.
// RUN: no64 convert %s -o %t.mlir --policy exact --range 0=-2147483648:2147483647 --range 1=-2147483648:2147483647 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 2, emulated 1
// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    -> tensor<4x2xi32> {
// CHECK:         %[[XH:.*]] = stablehlo.bitcast_convert %{{.*}} : (tensor<4xi32>) -> tensor<4xui32>
// CHECK-NEXT:    %[[XL:.*]] = stablehlo.bitcast_convert %arg0 : (tensor<4xi32>) -> tensor<4xui32>
// CHECK:         %[[YH:.*]] = stablehlo.bitcast_convert %{{.*}} : (tensor<4xi32>) -> tensor<4xui32>
// CHECK-NEXT:    %[[YL:.*]] = stablehlo.bitcast_convert %arg1 : (tensor<4xi32>) -> tensor<4xui32>
// CHECK-NEXT:    %[[MASK:.*]] = stablehlo.constant dense<65535> : tensor<4xui32>
// CHECK-NEXT:    %[[SIXTEEN:.*]] = stablehlo.constant dense<16> : tensor<4xui32>
// CHECK-NEXT:    %[[X0:.*]] = stablehlo.and %[[XL]], %[[MASK]] : tensor<4xui32>
// CHECK-NEXT:    %[[X1:.*]] = stablehlo.shift_right_logical %[[XL]], %[[SIXTEEN]] : tensor<4xui32>
// CHECK-NEXT:    %[[Y0:.*]] = stablehlo.and %[[YL]], %[[MASK]] : tensor<4xui32>
// CHECK-NEXT:    %[[Y1:.*]] = stablehlo.shift_right_logical %[[YL]], %[[SIXTEEN]] : tensor<4xui32>
// CHECK-NEXT:    %[[P10:.*]] = stablehlo.multiply %[[X1]], %[[Y0]] : tensor<4xui32>
// CHECK-NEXT:    %[[P00:.*]] = stablehlo.multiply %[[X0]], %[[Y0]] : tensor<4xui32>
// CHECK-NEXT:    %[[P00HI:.*]] = stablehlo.shift_right_logical %[[P00]], %[[SIXTEEN]] : tensor<4xui32>
// CHECK-NEXT:    %[[T:.*]] = stablehlo.add %[[P10]], %[[P00HI]] : tensor<4xui32>
// CHECK-NEXT:    %[[P01:.*]] = stablehlo.multiply %[[X0]], %[[Y1]] : tensor<4xui32>
// CHECK-NEXT:    %[[TLO:.*]] = stablehlo.and %[[T]], %[[MASK]] : tensor<4xui32>
// CHECK-NEXT:    %[[W:.*]] = stablehlo.add %[[P01]], %[[TLO]] : tensor<4xui32>
// CHECK-NEXT:    %[[P11:.*]] = stablehlo.multiply %[[X1]], %[[Y1]] : tensor<4xui32>
// CHECK-NEXT:    %[[THI:.*]] = stablehlo.shift_right_logical %[[T]], %[[SIXTEEN]] : tensor<4xui32>
// CHECK-NEXT:    %[[H1:.*]] = stablehlo.add %[[P11]], %[[THI]] : tensor<4xui32>
// CHECK-NEXT:    %[[WHI:.*]] = stablehlo.shift_right_logical %[[W]], %[[SIXTEEN]] : tensor<4xui32>
// CHECK-NEXT:    %[[CARRY:.*]] = stablehlo.add %[[H1]], %[[WHI]] : tensor<4xui32>
// CHECK-NEXT:    %[[LO:.*]] = stablehlo.multiply %[[XL]], %[[YL]] : tensor<4xui32>
// CHECK-NOT:     stablehlo.compare
// CHECK:         %[[CROSS1:.*]] = stablehlo.multiply %[[XL]], %[[YH]] : tensor<4xui32>
// CHECK-NEXT:    %[[CROSS2:.*]] = stablehlo.multiply %[[XH]], %[[YL]] : tensor<4xui32>
// CHECK-NEXT:    %[[CROSS:.*]] = stablehlo.add %[[CROSS1]], %[[CROSS2]] : tensor<4xui32>
// CHECK-NEXT:    %[[HI:.*]] = stablehlo.add %[[CARRY]], %[[CROSS]] : tensor<4xui32>
// CHECK-NEXT:    stablehlo.bitcast_convert %[[LO]] : (tensor<4xui32>) -> tensor<4xi32>
// CHECK:         stablehlo.bitcast_convert %[[HI]] : (tensor<4xui32>) -> tensor<4xi32>
// CHECK:         stablehlo.select {{.*}} : tensor<2x4xi1>, tensor<2x4xi32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<4xi64>, %y: tensor<4xi64>) -> tensor<4xi64> {
  %z = stablehlo.multiply %x, %y : tensor<4xi64>
  return %z : tensor<4xi64>
}

// -----

// A signed compare of word pairs: the high words decide (signed) unless
// they are equal, then the low words do (unsigned).  The sum x + 5000000000
// needs both words; its comparison is a 32-bit i1 and leaves no pair behind.
// The constant's high word, read as signed, is a constant (no64.ir.fold).
// RUN: no64 convert %s -o %t.mlir --policy exact --range 0=-2147483648:2147483647 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 1, emulated 1
// CHECK-LABEL: func.func public @main(
// CHECK-SAME:    -> tensor<4xi1> {
// CHECK:         %[[KLO:.*]] = stablehlo.constant dense<705032704> : tensor<4xui32>
// CHECK-NEXT:    %[[KHI:.*]] = stablehlo.constant dense<1> : tensor<4xui32>
// CHECK-NEXT:    %[[SLO:.*]] = stablehlo.add %[[XL:.*]], %[[KLO]] : tensor<4xui32>
// CHECK-NEXT:    %[[LT0:.*]] = stablehlo.compare LT, %[[SLO]], %[[XL]], UNSIGNED
// CHECK-NEXT:    %[[CARRY:.*]] = stablehlo.convert %[[LT0]] : (tensor<4xi1>) -> tensor<4xui32>
// CHECK-NEXT:    %[[H:.*]] = stablehlo.add %{{.*}}, %[[KHI]] : tensor<4xui32>
// CHECK-NEXT:    %[[SHI:.*]] = stablehlo.add %[[H]], %[[CARRY]] : tensor<4xui32>
// CHECK:         %[[KHI2:.*]] = stablehlo.constant dense<1> : tensor<4xui32>
// CHECK-NEXT:    %[[SAME:.*]] = stablehlo.compare EQ, %[[SHI]], %[[KHI2]], UNSIGNED
// CHECK-NEXT:    %[[SHI32:.*]] = stablehlo.bitcast_convert %[[SHI]] : (tensor<4xui32>) -> tensor<4xi32>
// CHECK-NEXT:    %[[KHI32:.*]] = stablehlo.constant dense<1> : tensor<4xi32>
// CHECK-NEXT:    %[[HILT:.*]] = stablehlo.compare LT, %[[SHI32]], %[[KHI32]], SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
// CHECK-NEXT:    %[[LOLT:.*]] = stablehlo.compare LT, %[[SLO]], %{{.*}}, UNSIGNED : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xi1>
// CHECK-NEXT:    %[[LT:.*]] = stablehlo.select %[[SAME]], %[[LOLT]], %[[HILT]] : tensor<4xi1>, tensor<4xi1>
// CHECK-NEXT:    return %[[LT]] : tensor<4xi1>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi1> {
  %k = stablehlo.constant dense<5000000000> : tensor<4xi64>
  %s = stablehlo.add %x, %k : tensor<4xi64>
  %p = stablehlo.compare LT, %s, %k, SIGNED : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  return %p : tensor<4xi1>
}

// -----

// An op with no word-pair rule that reads a value needing both words is
// refused, by name and line, and nothing is written.
// RUN: no64 convert %s -o %t.mlir --policy exact 2> %t.err; test $? = 2
// RUN: test ! -e %t.mlir && test "$(wc -l < %t.err)" = 1
// RUN: filecheck %s --check-prefix=ERR --input-file %t.err
// ERR: no64: error: stablehlo.map at {{.*}}word_arithmetic.mlir:134:8: this op reads or computes a 64-bit integer that may not fit in 32 bits, and no64 cannot compute it exactly in 32-bit words (no emulation for this op)
// ERR-NOT: Traceback
func.func public @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %k = stablehlo.constant dense<5000000000> : tensor<4xi64>
  %s = stablehlo.add %x, %k : tensor<4xi64>
  %r = "stablehlo.map"(%s) ({
  ^bb0(%a: tensor<i64>):
    stablehlo.return %a : tensor<i64>
  }) {dimensions = array<i64: 0>} : (tensor<4xi64>) -> tensor<4xi64>
  return %r : tensor<4xi64>
}
