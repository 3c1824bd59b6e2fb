// The add claims a type its operand does not have.
module {
  func.func public @main(%x: tensor<4xf64>) -> tensor<4xf64> {
    %y = stablehlo.add %x, %x : tensor<3xf64>
    return %y : tensor<4xf64>
  }
}
