// No 64-bit type anywhere.
module @clean_f32 {
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = stablehlo.add %x, %x : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
