// An op from a dialect no64 does not know.
module {
  func.func public @main(%x: tensor<4xf64>) -> tensor<4xf64> {
    %y = mystery.frobnicate %x : tensor<4xf64>
    return %y : tensor<4xf64>
  }
}
