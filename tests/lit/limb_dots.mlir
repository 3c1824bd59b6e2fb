// Integer dots on a target whose f32 engine computes them (neuron: exact only up to
// 2**24, EVRF035) or that refuses them (neuron-trn2): split into limb dots.

// A full-range int32 matmul over 512 terms on Trn2: 8-bit limbs of the lhs (the top
// one signed, by an arithmetic shift) and 7-bit limbs of the rhs, the 14 pairs below
// bit 32 contracted as f32 dots (15-bit products, sums within 512 * 255 * 127 < 2**24),
// converted back and added at their offsets; no integer dot is left.  The int64
// result stays int64: Trn2 has 64-bit integers natively.
// RUN: no64 convert %s -o %t.mlir --target neuron-trn2 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// RUN: filecheck %s --input-file %t.mlir --check-prefix=NOINT
// RUN: no64 check --target neuron-trn2 %t.mlir
// REPORT: kept i64, u64 as they are (native on target neuron-trn2)
// REPORT: target neuron-trn2: 1 op rewritten into 14 exact ops of their kind
// CHECK-LABEL: func.func public @main(%arg0: tensor<2x512xi32>{{.*}}, %arg1: tensor<512x3xi32>{{.*}}) -> tensor<2x3xi64>
// CHECK-NEXT:    %[[M0:.*]] = stablehlo.constant dense<255> : tensor<2x512xi32>
// CHECK-NEXT:    %[[A0:.*]] = stablehlo.and %arg0, %[[M0]]
// CHECK-NEXT:    %[[S8:.*]] = stablehlo.constant dense<8> : tensor<2x512xi32>
// CHECK-NEXT:    %[[R8:.*]] = stablehlo.shift_right_logical %arg0, %[[S8]]
// CHECK-NEXT:    %[[M1:.*]] = stablehlo.constant dense<255> : tensor<2x512xi32>
// CHECK-NEXT:    %[[A1:.*]] = stablehlo.and %[[R8]], %[[M1]]
// CHECK:         %[[S24:.*]] = stablehlo.constant dense<24> : tensor<2x512xi32>
// CHECK-NEXT:    %[[A3:.*]] = stablehlo.shift_right_arithmetic %arg0, %[[S24]]
// CHECK-NEXT:    %[[N0:.*]] = stablehlo.constant dense<127> : tensor<512x3xi32>
// CHECK-NEXT:    %[[B0:.*]] = stablehlo.and %arg1, %[[N0]]
// CHECK:         %[[S28:.*]] = stablehlo.constant dense<28> : tensor<512x3xi32>
// CHECK-NEXT:    %[[B4:.*]] = stablehlo.shift_right_arithmetic %arg1, %[[S28]]
// CHECK-NEXT:    %[[FA0:.*]] = stablehlo.convert %[[A0]] : (tensor<2x512xi32>) -> tensor<2x512xf32>
// CHECK:         %[[FB0:.*]] = stablehlo.convert %[[B0]] : (tensor<512x3xi32>) -> tensor<512x3xf32>
// CHECK:         %[[D00:.*]] = stablehlo.dot_general %[[FA0]], %[[FB0]], contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<2x512xf32>, tensor<512x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[I00:.*]] = stablehlo.convert %[[D00]] : (tensor<2x3xf32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %[[D01:.*]] = stablehlo.dot_general %[[FA0]], %{{.*}}, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST]
// CHECK-NEXT:    %[[I01:.*]] = stablehlo.convert %[[D01]]
// CHECK-COUNT-12: stablehlo.dot_general {{.*}} precision = [HIGHEST, HIGHEST] : (tensor<2x512xf32>, tensor<512x3xf32>) -> tensor<2x3xf32>
// CHECK:         %[[C7:.*]] = stablehlo.constant dense<7> : tensor<2x3xi32>
// CHECK-NEXT:    %[[L7:.*]] = stablehlo.shift_left %[[I01]], %[[C7]] : tensor<2x3xi32>
// CHECK-NEXT:    %{{.*}} = stablehlo.add %[[I00]], %[[L7]] : tensor<2x3xi32>
// CHECK:         %[[C31:.*]] = stablehlo.constant dense<31> : tensor<2x3xi32>
// CHECK-NEXT:    %[[L31:.*]] = stablehlo.shift_left %{{.*}}, %[[C31]] : tensor<2x3xi32>
// CHECK-NEXT:    %[[SUM:.*]] = stablehlo.add %{{.*}}, %[[L31]] : tensor<2x3xi32>
// CHECK-NEXT:    %[[WIDE:.*]] = stablehlo.convert %[[SUM]] : (tensor<2x3xi32>) -> tensor<2x3xi64>
// CHECK-NEXT:    return %[[WIDE]] : tensor<2x3xi64>
// NOINT-NOT:     dot_general{{.*}}: (tensor<{{[0-9x]+}}xi32>
func.func public @main(%a: tensor<2x512xi32>, %b: tensor<512x3xi32>) -> tensor<2x3xi64> {
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x512xi32>, tensor<512x3xi32>) -> tensor<2x3xi32>
  %e = stablehlo.convert %d : (tensor<2x3xi32>) -> tensor<2x3xi64>
  return %e : tensor<2x3xi64>
}

// -----

// On Trn1, with both operands known within [-1000, 1000]: the lhs (11 bits) stays
// whole, the rhs is split into two 5-bit limbs and its sign (512 * 1000 * 31 < 2**24),
// and the three limb dots are integer dots, which the target check that convert runs
// (with the declared ranges) proves exact: it warns of nothing.
// RUN: no64 convert %s -o %t.mlir --target neuron --range 0=-1000:1000 --range 1=-1000:1000 2> %t.err | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: test ! -s %t.err
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 3
// REPORT: target neuron: 1 op rewritten into 3 exact ops of their kind
// CHECK-LABEL: func.func public @main(%arg0: tensor<2x512xi32>{{.*}}, %arg1: tensor<512x3xi32>{{.*}}) -> tensor<2x3xi32>
// CHECK-NEXT:    %[[M:.*]] = stablehlo.constant dense<31> : tensor<512x3xi32>
// CHECK-NEXT:    %[[B0:.*]] = stablehlo.and %arg1, %[[M]]
// CHECK-NEXT:    %[[S5:.*]] = stablehlo.constant dense<5> : tensor<512x3xi32>
// CHECK-NEXT:    %[[R5:.*]] = stablehlo.shift_right_logical %arg1, %[[S5]]
// CHECK-NEXT:    %[[M1:.*]] = stablehlo.constant dense<31> : tensor<512x3xi32>
// CHECK-NEXT:    %[[B1:.*]] = stablehlo.and %[[R5]], %[[M1]]
// CHECK-NEXT:    %[[S10:.*]] = stablehlo.constant dense<10> : tensor<512x3xi32>
// CHECK-NEXT:    %[[B2:.*]] = stablehlo.shift_right_arithmetic %arg1, %[[S10]]
// CHECK-NEXT:    %[[D0:.*]] = stablehlo.dot_general %arg0, %[[B0]], contracting_dims = [1] x [0] : (tensor<2x512xi32>, tensor<512x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %[[D1:.*]] = stablehlo.dot_general %arg0, %[[B1]], contracting_dims = [1] x [0]
// CHECK-NEXT:    %[[D2:.*]] = stablehlo.dot_general %arg0, %[[B2]], contracting_dims = [1] x [0]
// CHECK-NEXT:    %[[C5:.*]] = stablehlo.constant dense<5> : tensor<2x3xi32>
// CHECK-NEXT:    %[[L1:.*]] = stablehlo.shift_left %[[D1]], %[[C5]]
// CHECK-NEXT:    %[[P:.*]] = stablehlo.add %[[D0]], %[[L1]]
// CHECK-NEXT:    %[[C10:.*]] = stablehlo.constant dense<10> : tensor<2x3xi32>
// CHECK-NEXT:    %[[L2:.*]] = stablehlo.shift_left %[[D2]], %[[C10]]
// CHECK-NEXT:    %[[SUM:.*]] = stablehlo.add %[[P]], %[[L2]]
// CHECK-NEXT:    return %[[SUM]] : tensor<2x3xi32>
// CHECK-NOT:     i64>
func.func public @main(%a: tensor<2x512xi64>, %b: tensor<512x3xi64>) -> tensor<2x3xi64> {
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x512xi64>, tensor<512x3xi64>) -> tensor<2x3xi64>
  return %d : tensor<2x3xi64>
}
