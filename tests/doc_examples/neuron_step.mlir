// A step for `no64 check --target neuron`: an int32 matmul (inexact on Trn1) and a variadic reduce (refused).
#loc1 = loc("model.py":41:12)
#loc2 = loc("model.py":57:9)
module @jit_step {
  func.func public @main(%arg0: tensor<8x128xi32>, %arg1: tensor<128x4xi32>, %arg2: tensor<8xf32>, %arg3: tensor<8xi32>) -> (tensor<8x4xi32>, tensor<f32>, tensor<i32>) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x128xi32>, tensor<128x4xi32>) -> tensor<8x4xi32> loc(#loc3)
    %c = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg2 init: %c), (%arg3 init: %c0) across dimensions = [0] : (tensor<8xf32>, tensor<8xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
     reducer(%a: tensor<f32>, %b: tensor<f32>) (%i: tensor<i32>, %j: tensor<i32>) {
      %2 = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.select %2, %a, %b : tensor<i1>, tensor<f32>
      %4 = stablehlo.select %2, %i, %j : tensor<i1>, tensor<i32>
      stablehlo.return %3, %4 : tensor<f32>, tensor<i32>
    } loc(#loc4)
    return %0, %1#0, %1#1 : tensor<8x4xi32>, tensor<f32>, tensor<i32>
  }
}
#loc3 = loc("dot_general"(#loc1))
#loc4 = loc("reduce"(#loc2))
