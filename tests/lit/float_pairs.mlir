// float64 computed as pairs of f32 (hi, lo): the entry takes and returns S x 2 pairs,
// unpacked once (hi = [..., 0], lo = [..., 1]) and packed back by a select over an
// iota (hi where the row is 0) and a transpose. Every sum an error term is taken from,
// and every divisor, passes through an optimization_barrier. Each BOUND is the op's
// published bound (docs/guides/float-pairs.md) plus u^2 for each float64 input read,
// which enters as the pair nearest it.

// add: TwoSum of the hi words and of the lo words, renormalized; 3u^2 + 2u^2.
// RUN: no64 convert %s -o %t.mlir --float-policy pairs | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: computed 3 float64 values as f32 pairs (hi, lo) in 1 op; inputs [0, 1] are [..., 2] pairs; outputs [0] come back as [..., 2] pairs (hi, lo)
// BOUND: 5u^2 of the result
// CHECK-LABEL: func.func public @main(%arg0: tensor<4x2xf32> {{.*}}, %arg1: tensor<4x2xf32> {{.*}}) -> tensor<4x2xf32> {
// CHECK-NEXT:    %[[YH0:[0-9]+]] = stablehlo.slice %arg1 [0:4, 0:1] : (tensor<4x2xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[YH:[0-9]+]] = stablehlo.reshape %[[YH0]] : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[YL0:[0-9]+]] = stablehlo.slice %arg1 [0:4, 1:2] : (tensor<4x2xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[YL:[0-9]+]] = stablehlo.reshape %[[YL0]] : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[XH0:[0-9]+]] = stablehlo.slice %arg0 [0:4, 0:1] : (tensor<4x2xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[XH:[0-9]+]] = stablehlo.reshape %[[XH0]] : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[XL0:[0-9]+]] = stablehlo.slice %arg0 [0:4, 1:2] : (tensor<4x2xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[XL:[0-9]+]] = stablehlo.reshape %[[XL0]] : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[S:[0-9]+]] = stablehlo.add %[[XH]], %[[YH]] : tensor<4xf32>
// CHECK-NEXT:    %[[SB:[0-9]+]] = stablehlo.optimization_barrier %[[S]] : tensor<4xf32>
// CHECK-NEXT:    %[[V:[0-9]+]] = stablehlo.subtract %[[SB]], %[[XH]] : tensor<4xf32>
// CHECK-NEXT:    %[[VB:[0-9]+]] = stablehlo.optimization_barrier %[[V]] : tensor<4xf32>
// CHECK-NEXT:    %[[A:[0-9]+]] = stablehlo.subtract %[[SB]], %[[VB]] : tensor<4xf32>
// CHECK-NEXT:    %[[AE:[0-9]+]] = stablehlo.subtract %[[A]], %[[XH]] : tensor<4xf32>
// CHECK-NEXT:    %[[BE:[0-9]+]] = stablehlo.subtract %[[VB]], %[[YH]] : tensor<4xf32>
// CHECK-NEXT:    %[[E:[0-9]+]] = stablehlo.add %[[AE]], %[[BE]] : tensor<4xf32>
// CHECK-NEXT:    %[[T:[0-9]+]] = stablehlo.add %[[XL]], %[[YL]] : tensor<4xf32>
// CHECK-NEXT:    %[[TB:[0-9]+]] = stablehlo.optimization_barrier %[[T]] : tensor<4xf32>
// CHECK:         %[[FIN:[0-9]+]] = stablehlo.is_finite %[[SB]] : (tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:    %[[H:[0-9]+]] = stablehlo.select %[[FIN]], %{{[0-9]+}}, %[[SB]] : tensor<4xi1>, tensor<4xf32>
// CHECK:         %[[FIN2:[0-9]+]] = stablehlo.is_finite %[[H]] : (tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:    %{{[a-z0-9_]+}} = stablehlo.constant dense<0.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %[[L:[0-9]+]] = stablehlo.select %[[FIN2]], %{{[0-9]+}}, %{{[a-z0-9_]+}} : tensor<4xi1>, tensor<4xf32>
// CHECK-NEXT:    %[[PH:[0-9]+]] = stablehlo.broadcast_in_dim %[[H]], dims = [1] : (tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[PL:[0-9]+]] = stablehlo.broadcast_in_dim %[[L]], dims = [1] : (tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[ROW:[0-9]+]] = stablehlo.iota dim = 0 : tensor<2x4xi32>
// CHECK-NEXT:    %[[ZERO:[a-z0-9_]+]] = stablehlo.constant dense<0> : tensor<2x4xi32>
// CHECK-NEXT:    %[[ISHI:[0-9]+]] = stablehlo.compare EQ, %[[ROW]], %[[ZERO]], SIGNED : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi1>
// CHECK-NEXT:    %[[P:[0-9]+]] = stablehlo.select %[[ISHI]], %[[PH]], %[[PL]] : tensor<2x4xi1>, tensor<2x4xf32>
// CHECK-NEXT:    %[[R:[0-9]+]] = stablehlo.transpose %[[P]], dims = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    return %[[R]] : tensor<4x2xf32>
// CHECK-NOT:     f64
func.func public @main(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %z = stablehlo.add %x, %y : tensor<4xf64>
  return %z : tensor<4xf64>
}

// -----

// multiply: operands scaled away from f32's subnormals, then the exact half-products of
// factors split by masking their low 12 significand bits; 7u^2 + 2u^2.
// RUN: no64 convert %s -o %t.mlir --float-policy pairs | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: computed 3 float64 values as f32 pairs (hi, lo) in 1 op; inputs [0, 1] are [..., 2] pairs; outputs [0] come back as [..., 2] pairs (hi, lo)
// REPORT-NEXT: events: pair-range 1
// BOUND: 9u^2 of the result
// CHECK-LABEL: func.func public @main(%arg0: tensor<4x2xf32> {{.*}}, %arg1: tensor<4x2xf32> {{.*}}) -> tensor<4x2xf32> {
// CHECK:         %{{[0-9]+}} = stablehlo.slice %arg0 [0:4, 0:1] : (tensor<4x2xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[XH:[0-9]+]] = stablehlo.reshape %{{[0-9]+}} : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.slice %arg0 [0:4, 1:2] : (tensor<4x2xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[XL:[0-9]+]] = stablehlo.reshape %{{[0-9]+}} : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[AX:[0-9]+]] = stablehlo.abs %[[XH]] : tensor<4xf32>
// CHECK:         %[[TINY:[a-z0-9_]+]] = stablehlo.constant dense<8.47032947E-22> : tensor<4xf32>
// CHECK-NEXT:    %[[BIG:[a-z0-9_]+]] = stablehlo.constant dense<3.63797881E-12> : tensor<4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.compare LT, %[[AX]], %[[TINY]], FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK:         %[[PB:[0-9]+]] = stablehlo.optimization_barrier %{{[0-9]+}} : tensor<4xf32>
// CHECK-NEXT:    %[[AI:[0-9]+]] = stablehlo.bitcast_convert %[[A:[0-9]+]] : (tensor<4xf32>) -> tensor<4xi32>
// CHECK-NEXT:    %[[MASK:[a-z0-9_]+]] = stablehlo.constant dense<-4096> : tensor<4xi32>
// CHECK-NEXT:    %[[AHI:[0-9]+]] = stablehlo.and %[[AI]], %[[MASK]] : tensor<4xi32>
// CHECK-NEXT:    %[[AH:[0-9]+]] = stablehlo.bitcast_convert %[[AHI]] : (tensor<4xi32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[AL:[0-9]+]] = stablehlo.subtract %[[A]], %[[AH]] : tensor<4xf32>
// CHECK:         %[[HH:[0-9]+]] = stablehlo.multiply %[[AH]], %[[BH:[0-9]+]] : tensor<4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.subtract %[[PB]], %[[HH]] : tensor<4xf32>
// CHECK:         %{{[0-9]+}} = stablehlo.broadcast_in_dim %{{[0-9]+}}, dims = [1] : (tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.broadcast_in_dim %{{[0-9]+}}, dims = [1] : (tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.iota dim = 0 : tensor<2x4xi32>
// CHECK:         %[[R:[0-9]+]] = stablehlo.transpose %{{[0-9]+}}, dims = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    return %[[R]] : tensor<4x2xf32>
// CHECK-NOT:     f64
func.func public @main(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %z = stablehlo.multiply %x, %y : tensor<4xf64>
  return %z : tensor<4xf64>
}

// -----

// divide: the f32 quotient of the hi words, by a divisor behind a barrier (XLA would
// turn a division by a constant into a product by its reciprocal), corrected by the
// exact remainder; 15u^2 + 2u^2.
// RUN: no64 convert %s -o %t.mlir --float-policy pairs | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: computed 3 float64 values as f32 pairs (hi, lo) in 1 op; inputs [0, 1] are [..., 2] pairs; outputs [0] come back as [..., 2] pairs (hi, lo)
// REPORT-NEXT: events: pair-range 1
// BOUND: 17u^2 of the result
// CHECK-LABEL: func.func public @main(%arg0: tensor<4x2xf32> {{.*}}, %arg1: tensor<4x2xf32> {{.*}}) -> tensor<4x2xf32> {
// CHECK:         %[[D:[0-9]+]] = stablehlo.optimization_barrier %{{[0-9]+}} : tensor<4xf32>
// CHECK-NEXT:    %[[Q:[0-9]+]] = stablehlo.divide %{{[0-9]+}}, %[[D]] : tensor<4xf32>
// CHECK-NEXT:    %[[DQ:[0-9]+]] = stablehlo.multiply %[[D]], %[[Q]] : tensor<4xf32>
// CHECK-NEXT:    %[[DQB:[0-9]+]] = stablehlo.optimization_barrier %[[DQ]] : tensor<4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.bitcast_convert %[[D]] : (tensor<4xf32>) -> tensor<4xi32>
// CHECK-NEXT:    %{{[a-z0-9_]+}} = stablehlo.constant dense<-4096> : tensor<4xi32>
// CHECK:         %{{[0-9]+}} = stablehlo.subtract %{{[0-9]+}}, %[[DQB]] : tensor<4xf32>
// CHECK:         %[[R:[0-9]+]] = stablehlo.transpose %{{[0-9]+}}, dims = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    return %[[R]] : tensor<4x2xf32>
// CHECK-NOT:     f64
func.func public @main(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %z = stablehlo.divide %x, %y : tensor<4xf64>
  return %z : tensor<4xf64>
}

// -----

// sqrt: one Newton step from the f32 root r of the (scaled) hi word,
// r + (x - r*r) / 2r with r*r exact; 4u^2 + u^2/2.
// RUN: no64 convert %s -o %t.mlir --float-policy pairs | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: computed 2 float64 values as f32 pairs (hi, lo) in 1 op; inputs [0] are [..., 2] pairs; outputs [0] come back as [..., 2] pairs (hi, lo)
// BOUND: 5u^2 of the result
// CHECK-LABEL: func.func public @main(%arg0: tensor<4x2xf32> {{.*}}) -> tensor<4x2xf32> {
// CHECK:         %[[XS:[0-9]+]] = stablehlo.multiply %{{[0-9]+}}, %{{[0-9]+}} : tensor<4xf32>
// CHECK-NEXT:    %[[XLS:[0-9]+]] = stablehlo.multiply %{{[0-9]+}}, %{{[0-9]+}} : tensor<4xf32>
// CHECK:         %[[ROOT:[0-9]+]] = stablehlo.sqrt %[[XS]] : tensor<4xf32>
// CHECK-NEXT:    %[[SQ:[0-9]+]] = stablehlo.multiply %[[ROOT]], %[[ROOT]] : tensor<4xf32>
// CHECK-NEXT:    %[[SQB:[0-9]+]] = stablehlo.optimization_barrier %[[SQ]] : tensor<4xf32>
// CHECK:         %[[RES:[0-9]+]] = stablehlo.subtract %[[XS]], %[[SQB]] : tensor<4xf32>
// CHECK-NEXT:    %[[NUM0:[0-9]+]] = stablehlo.subtract %[[RES]], %{{[0-9]+}} : tensor<4xf32>
// CHECK-NEXT:    %[[NUM:[0-9]+]] = stablehlo.add %[[NUM0]], %[[XLS]] : tensor<4xf32>
// CHECK-NEXT:    %[[TWO:[0-9]+]] = stablehlo.add %[[ROOT]], %[[ROOT]] : tensor<4xf32>
// CHECK-NEXT:    %[[STEP:[0-9]+]] = stablehlo.divide %[[NUM]], %[[TWO]] : tensor<4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.add %[[ROOT]], %[[STEP]] : tensor<4xf32>
// CHECK:         %[[R:[0-9]+]] = stablehlo.transpose %{{[0-9]+}}, dims = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    return %[[R]] : tensor<4x2xf32>
// CHECK-NOT:     f64
func.func public @main(%x: tensor<4xf64>) -> tensor<4xf64> {
  %z = stablehlo.sqrt %x : tensor<4xf64>
  return %z : tensor<4xf64>
}

// -----

// A sum of 8: one variadic reduce of the hi and lo words from (-0, +0), its body a pair
// addition, then the init added; 8 pair additions of 3u^2 of at most the terms'
// magnitudes, and u^2 of them for the inputs.
// RUN: no64 convert %s -o %t.mlir --float-policy pairs | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: computed 3 float64 values as f32 pairs (hi, lo) in 2 ops; inputs [0] are [..., 2] pairs; outputs [0] come back as [..., 2] pairs (hi, lo)
// BOUND: 25u^2 of the magnitudes
// CHECK-LABEL: func.func public @main(%arg0: tensor<8x2xf32> {{.*}}) -> tensor<2xf32> {
// CHECK:         %[[INIT:[0-9]+]]:2 = stablehlo.optimization_barrier %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<f32>, tensor<f32>
// CHECK:         %[[NEGZ:[a-z0-9_]+]] = stablehlo.constant dense<-0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[POSZ:[a-z0-9_]+]] = stablehlo.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[FROM:[0-9]+]]:2 = stablehlo.optimization_barrier %[[NEGZ]], %[[POSZ]] : tensor<f32>, tensor<f32>
// CHECK-NEXT:    %[[SUM:[0-9]+]]:2 = stablehlo.reduce(%{{[0-9]+}} init: %[[FROM]]#0), (%{{[0-9]+}} init: %[[FROM]]#1) across dimensions = [0] : (tensor<8xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>) -> (tensor<f32>, tensor<f32>)
// CHECK-NEXT:    reducer(%[[AH:[a-z0-9]+]]: tensor<f32> {{.*}}, %[[BH:[a-z0-9]+]]: tensor<f32> {{.*}}) (%[[AL:[a-z0-9]+]]: tensor<f32> {{.*}}, %[[BL:[a-z0-9]+]]: tensor<f32> {{.*}})  {
// CHECK-NEXT:      %[[S:[0-9]+]] = stablehlo.add %[[AH]], %[[BH]] : tensor<f32>
// CHECK-NEXT:      %{{[0-9]+}} = stablehlo.optimization_barrier %[[S]] : tensor<f32>
// CHECK:           stablehlo.return %{{[0-9]+}}, %{{[0-9]+}} : tensor<f32>, tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.add %[[SUM]]#0, %[[INIT]]#0 : tensor<f32>
// CHECK:         %{{[0-9]+}} = stablehlo.broadcast_in_dim %{{[0-9]+}}, dims = [] : (tensor<f32>) -> tensor<2xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.broadcast_in_dim %{{[0-9]+}}, dims = [] : (tensor<f32>) -> tensor<2xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.iota dim = 0 : tensor<2xi32>
// CHECK:         %[[R:[0-9]+]] = stablehlo.transpose %{{[0-9]+}}, dims = [0] : (tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:    return %[[R]] : tensor<2xf32>
// CHECK-NOT:     f64
func.func public @main(%x: tensor<8xf64>) -> tensor<f64> {
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<8xf64>, tensor<f64>) -> tensor<f64>
  return %s : tensor<f64>
}

// -----

// A window sum (a pooling's: windows of 3, stride 2, one padded in front): each word
// padded with -0 (XLA skips padded positions), a strided slice per window position, the
// slices added by pair additions in a tree, then the init added once; 2 levels of pair
// additions and the init's, 3u^2 each of at most the window's magnitudes, and u^2 of
// them for the inputs.
// RUN: no64 convert %s -o %t.mlir --float-policy pairs | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: computed 3 float64 values as f32 pairs (hi, lo) in 2 ops; inputs [0] are [..., 2] pairs; outputs [0] come back as [..., 2] pairs (hi, lo)
// BOUND: 10u^2 of the magnitudes
// CHECK-LABEL: func.func public @main(%arg0: tensor<8x2xf32> {{.*}}) -> tensor<4x2xf32> {
// CHECK:         %[[INIT:[0-9]+]]:2 = stablehlo.optimization_barrier %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<f32>, tensor<f32>
// CHECK:         %[[FILL:[0-9]+]]:2 = stablehlo.optimization_barrier %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : tensor<f32>, tensor<f32>
// CHECK-NEXT:    %[[PH:[0-9]+]] = stablehlo.pad %{{[0-9]+}}, %[[FILL]]#0, low = [1], high = [0], interior = [0] : (tensor<8xf32>, tensor<f32>) -> tensor<9xf32>
// CHECK-NEXT:    %[[H0:[0-9]+]] = stablehlo.slice %[[PH]] [0:7:2] : (tensor<9xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[H1:[0-9]+]] = stablehlo.slice %[[PH]] [1:8:2] : (tensor<9xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.slice %[[PH]] [2:9:2] : (tensor<9xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[PL:[0-9]+]] = stablehlo.pad %{{[0-9]+}}, %[[FILL]]#1, low = [1], high = [0], interior = [0] : (tensor<8xf32>, tensor<f32>) -> tensor<9xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.slice %[[PL]] [0:7:2] : (tensor<9xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.slice %[[PL]] [1:8:2] : (tensor<9xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.slice %[[PL]] [2:9:2] : (tensor<9xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[S:[0-9]+]] = stablehlo.add %[[H0]], %[[H1]] : tensor<4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.optimization_barrier %[[S]] : tensor<4xf32>
// CHECK-NOT:     stablehlo.reduce
// CHECK:         %[[IH:[0-9]+]] = stablehlo.broadcast_in_dim %[[INIT]]#0, dims = [] : (tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.broadcast_in_dim %[[INIT]]#1, dims = [] : (tensor<f32>) -> tensor<4xf32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.add %{{[0-9]+}}, %[[IH]] : tensor<4xf32>
// CHECK:         return %{{[0-9]+}} : tensor<4x2xf32>
// CHECK-NOT:     f64
func.func public @main(%x: tensor<8xf64>) -> tensor<4xf64> {
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %s = "stablehlo.reduce_window"(%x, %z) ({
  ^bb0(%a: tensor<f64>, %b: tensor<f64>):
    %t = stablehlo.add %a, %b : tensor<f64>
    stablehlo.return %t : tensor<f64>
  }) {window_dimensions = array<i64: 3>, window_strides = array<i64: 2>, padding = dense<[[1, 0]]> : tensor<1x2xi64>} : (tensor<8xf64>, tensor<f64>) -> tensor<4xf64>
  return %s : tensor<4xf64>
}

// -----

// A dot_general over 4 elements (below the 32 where exact slices take over): the
// operands broadcast against each other, exact pair products, and a variadic reduce of
// the hi and lo words over the contraction; products 7u^2 and 4 pair additions 3u^2 of
// at most the products' magnitudes, and u^2 for each of the two inputs.
// RUN: no64 convert %s -o %t.mlir --float-policy pairs | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: computed 3 float64 values as f32 pairs (hi, lo) in 1 op; inputs [0, 1] are [..., 2] pairs; outputs [0] come back as [..., 2] pairs (hi, lo)
// REPORT-NEXT: events: pair-range 1
// BOUND: 21u^2 of the magnitudes
// CHECK-LABEL: func.func public @main(%arg0: tensor<2x4x2xf32> {{.*}}, %arg1: tensor<4x3x2xf32> {{.*}}) -> tensor<2x3x2xf32> {
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.slice %arg1 [0:4, 0:3, 0:1] : (tensor<4x3x2xf32>) -> tensor<4x3x1xf32>
// CHECK:         %{{[0-9]+}} = stablehlo.broadcast_in_dim %{{[0-9]+}}, dims = [0, 1, 3] : (tensor<1x2x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK:         %{{[0-9]+}} = stablehlo.broadcast_in_dim %{{[0-9]+}}, dims = [0, 2, 3] : (tensor<1x3x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK:         %{{[a-z0-9_]+}} = stablehlo.constant dense<-4096> : tensor<1x2x3x4xi32>
// CHECK-NOT:     stablehlo.dot_general
// CHECK:         %[[SUM:[0-9]+]]:2 = stablehlo.reduce(%{{[0-9]+}} init: %{{[0-9]+}}#0), (%{{[0-9]+}} init: %{{[0-9]+}}#1) across dimensions = [3] : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<f32>, tensor<f32>) -> (tensor<1x2x3xf32>, tensor<1x2x3xf32>)
// CHECK:         %[[H:[0-9]+]] = stablehlo.reshape %[[SUM]]#0 : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[L:[0-9]+]] = stablehlo.reshape %[[SUM]]#1 : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[H6:[0-9]+]] = stablehlo.reshape %[[H]] : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %[[L6:[0-9]+]] = stablehlo.reshape %[[L]] : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %[[PH:[0-9]+]] = stablehlo.broadcast_in_dim %[[H6]], dims = [1] : (tensor<6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    %[[PL:[0-9]+]] = stablehlo.broadcast_in_dim %[[L6]], dims = [1] : (tensor<6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    %[[ROW:[0-9]+]] = stablehlo.iota dim = 0 : tensor<2x6xi32>
// CHECK-NEXT:    %[[ZERO:[a-z0-9_]+]] = stablehlo.constant dense<0> : tensor<2x6xi32>
// CHECK-NEXT:    %[[ISHI:[0-9]+]] = stablehlo.compare EQ, %[[ROW]], %[[ZERO]], SIGNED : (tensor<2x6xi32>, tensor<2x6xi32>) -> tensor<2x6xi1>
// CHECK-NEXT:    %[[P:[0-9]+]] = stablehlo.select %[[ISHI]], %[[PH]], %[[PL]] : tensor<2x6xi1>, tensor<2x6xf32>
// CHECK-NEXT:    %[[T:[0-9]+]] = stablehlo.transpose %[[P]], dims = [1, 0] : (tensor<2x6xf32>) -> tensor<6x2xf32>
// CHECK-NEXT:    %[[R:[0-9]+]] = stablehlo.reshape %[[T]] : (tensor<6x2xf32>) -> tensor<2x3x2xf32>
// CHECK-NEXT:    return %[[R]] : tensor<2x3x2xf32>
// CHECK-NOT:     f64
func.func public @main(%a: tensor<2x4xf64>, %b: tensor<4x3xf64>) -> tensor<2x3xf64> {
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x4xf64>, tensor<4x3xf64>) -> tensor<2x3xf64>
  return %d : tensor<2x3xf64>
}

// -----

// A dot_general over 40 elements on a TPU's int8 datapath (its profile's residues are
// off: measured slower there): the one-pass bf16 estimate of (|A||B|)_ij sets how many
// levels of int8 digits beyond the fewest run (a while loop over them), the fewest
// always (one int8 dot each); an exact fixed-point sum, rounded once. TAU + SUM_ACCURACY
// (3.26u^2) of the magnitudes, and u^2 for each of the two inputs.
// RUN: no64 convert %s -o %t.mlir --float-policy pairs --target tpu | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: computed 3 float64 values as f32 pairs (hi, lo) in 1 op; inputs [0, 1] are [..., 2] pairs; outputs [0] come back as [..., 2] pairs (hi, lo)
// REPORT-NEXT: kept c128, f64, i64, u64 as they are (native on target tpu)
// BOUND: 6u^2 of the magnitudes
// CHECK-LABEL: func.func public @main(%arg0: tensor<2x40x2xf32> {{.*}}, %arg1: tensor<40x3x2xf32> {{.*}}) -> tensor<2x3x2xf32> {
// CHECK:         stablehlo.dot_general %{{[0-9]+}}, %{{[0-9]+}}, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<1x2x40xbf16>, tensor<1x40x3xbf16>) -> tensor<1x2x3xf32>
// CHECK:         %[[MIN:[0-9]+]] = stablehlo.reduce(%{{[0-9]+}} init: %{{[a-z0-9_]+}}) applies stablehlo.minimum across dimensions = [0, 1, 2] : (tensor<1x2x3xf32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT:    %{{[a-z0-9_]+}} = stablehlo.constant dense<{{.*}}> : tensor<f32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.compare LT, %[[MIN]], %{{[a-z0-9_]+}}, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
// CHECK:         stablehlo.while
// CHECK:           stablehlo.dot_general {{.*}} : (tensor<1x2x40xi8>, tensor<1x40x3xi8>) -> tensor<1x2x3xi32>
// CHECK:         stablehlo.dot_general {{.*}} : (tensor<1x2x320xi8>, tensor<1x320x3xi8>) -> tensor<1x2x3xi32>
// CHECK-NOT:     xi8>) -> tensor<{{[0-9]+}}x1x2x3xi32>
// CHECK-NOT:     f64
func.func public @main(%a: tensor<2x40xf64>, %b: tensor<40x3xf64>) -> tensor<2x3xf64> {
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x40xf64>, tensor<40x3xf64>) -> tensor<2x3xf64>
  return %d : tensor<2x3xf64>
}

// -----

// compare and select: x < y on pairs is hi < hi, or hi == hi and lo < lo (NaN
// unordered, as the hi words are); select takes both words of the pair it picks, exact:
// only the inputs' u^2.
// RUN: no64 convert %s -o %t.mlir --float-policy pairs | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: computed 3 float64 values as f32 pairs (hi, lo) in 2 ops; inputs [0, 1] are [..., 2] pairs; outputs [0] come back as [..., 2] pairs (hi, lo)
// BOUND: 1u^2 of the result
// CHECK-LABEL: func.func public @main(%arg0: tensor<4x2xf32> {{.*}}, %arg1: tensor<4x2xf32> {{.*}}) -> (tensor<4x2xf32>, tensor<4xi1>) {
// CHECK-NEXT:    %[[YH0:[0-9]+]] = stablehlo.slice %arg1 [0:4, 0:1] : (tensor<4x2xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[YH:[0-9]+]] = stablehlo.reshape %[[YH0]] : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[YL0:[0-9]+]] = stablehlo.slice %arg1 [0:4, 1:2] : (tensor<4x2xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[YL:[0-9]+]] = stablehlo.reshape %[[YL0]] : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[XH0:[0-9]+]] = stablehlo.slice %arg0 [0:4, 0:1] : (tensor<4x2xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[XH:[0-9]+]] = stablehlo.reshape %[[XH0]] : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[XL0:[0-9]+]] = stablehlo.slice %arg0 [0:4, 1:2] : (tensor<4x2xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %[[XL:[0-9]+]] = stablehlo.reshape %[[XL0]] : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[EQ:[0-9]+]] = stablehlo.compare EQ, %[[XH]], %[[YH]], FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:    %[[LT:[0-9]+]] = stablehlo.compare LT, %[[XH]], %[[YH]], FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:    %[[LTL:[0-9]+]] = stablehlo.compare LT, %[[XL]], %[[YL]], FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT:    %[[TIE:[0-9]+]] = stablehlo.and %[[EQ]], %[[LTL]] : tensor<4xi1>
// CHECK-NEXT:    %[[C:[0-9]+]] = stablehlo.or %[[LT]], %[[TIE]] : tensor<4xi1>
// CHECK-NEXT:    %[[H:[0-9]+]] = stablehlo.select %[[C]], %[[XH]], %[[YH]] : tensor<4xi1>, tensor<4xf32>
// CHECK-NEXT:    %[[L:[0-9]+]] = stablehlo.select %[[C]], %[[XL]], %[[YL]] : tensor<4xi1>, tensor<4xf32>
// CHECK-NEXT:    %[[PH:[0-9]+]] = stablehlo.broadcast_in_dim %[[H]], dims = [1] : (tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[PL:[0-9]+]] = stablehlo.broadcast_in_dim %[[L]], dims = [1] : (tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[ROW:[0-9]+]] = stablehlo.iota dim = 0 : tensor<2x4xi32>
// CHECK-NEXT:    %[[ZERO:[a-z0-9_]+]] = stablehlo.constant dense<0> : tensor<2x4xi32>
// CHECK-NEXT:    %[[ISHI:[0-9]+]] = stablehlo.compare EQ, %[[ROW]], %[[ZERO]], SIGNED : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi1>
// CHECK-NEXT:    %[[P:[0-9]+]] = stablehlo.select %[[ISHI]], %[[PH]], %[[PL]] : tensor<2x4xi1>, tensor<2x4xf32>
// CHECK-NEXT:    %[[R:[0-9]+]] = stablehlo.transpose %[[P]], dims = [1, 0] : (tensor<2x4xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    return %[[R]], %[[C]] : tensor<4x2xf32>, tensor<4xi1>
// CHECK-NOT:     f64
func.func public @main(%x: tensor<4xf64>, %y: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xi1>) {
  %c = stablehlo.compare LT, %x, %y, FLOAT : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xi1>
  %m = stablehlo.select %c, %x, %y : tensor<4xi1>, tensor<4xf64>
  return %m, %c : tensor<4xf64>, tensor<4xi1>
}

// -----

// convert f64 -> i32: the pair truncated toward zero (floor of the magnitude, the lo
// word's floor carried where the hi word is an integer), then converted in halves
// beyond 2**30, saturated at the int32 extremes and NaN made 0, as XLA converts; the
// integer result bit for bit.
// RUN: no64 convert %s -o %t.mlir --float-policy pairs | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: computed 1 float64 value as f32 pairs (hi, lo) in 1 op; inputs [0] are [..., 2] pairs
// BOUND: 0u^2 of the result
// CHECK-LABEL: func.func public @main(%arg0: tensor<4x2xf32> {{.*}}) -> tensor<4xi32> {
// CHECK:         %[[XH:[0-9]+]] = stablehlo.reshape %{{[0-9]+}} : (tensor<4x1xf32>) -> tensor<4xf32>
// CHECK:         %[[NEG:[0-9]+]] = stablehlo.compare LT, %[[XH]], %{{[a-z0-9_]+}}, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK:         %{{[0-9]+}} = stablehlo.floor %[[XH]] : tensor<4xf32>
// CHECK:         %[[T:[0-9]+]] = stablehlo.select %[[NEG]], %{{[0-9]+}}, %{{[0-9]+}} : tensor<4xi1>, tensor<4xf32>
// CHECK:         %[[HALF:[0-9]+]] = stablehlo.multiply %[[T]], %{{[a-z0-9_]+}} : tensor<4xf32>
// CHECK-NEXT:    %[[HI:[0-9]+]] = stablehlo.convert %[[HALF]] : (tensor<4xf32>) -> tensor<4xi32>
// CHECK-NEXT:    %{{[0-9]+}} = stablehlo.add %[[HI]], %[[HI]] : tensor<4xi32>
// CHECK:         %[[MAX:[a-z0-9_]+]] = stablehlo.constant dense<2147483647> : tensor<4xi32>
// CHECK-NEXT:    %[[S1:[0-9]+]] = stablehlo.select %{{[0-9]+}}, %[[MAX]], %{{[0-9]+}} : tensor<4xi1>, tensor<4xi32>
// CHECK-NEXT:    %[[MIN:[a-z0-9_]+]] = stablehlo.constant dense<-2147483648> : tensor<4xi32>
// CHECK-NEXT:    %[[S2:[0-9]+]] = stablehlo.select %{{[0-9]+}}, %[[MIN]], %[[S1]] : tensor<4xi1>, tensor<4xi32>
// CHECK-NEXT:    %[[Z:[a-z0-9_]+]] = stablehlo.constant dense<0> : tensor<4xi32>
// CHECK-NEXT:    %[[R:[0-9]+]] = stablehlo.select %{{[0-9]+}}, %[[Z]], %[[S2]] : tensor<4xi1>, tensor<4xi32>
// CHECK-NEXT:    return %[[R]] : tensor<4xi32>
// CHECK-NOT:     f64
func.func public @main(%x: tensor<4xf64>) -> tensor<4xi32> {
  %z = stablehlo.convert %x : (tensor<4xf64>) -> tensor<4xi32>
  return %z : tensor<4xi32>
}
