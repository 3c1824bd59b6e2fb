// The same out-of-range i64 constant added five times, all at one source
// line (as a loop JAX unrolls writes it): five alike report lines.
module @repeated {
  func.func public @main(%n: tensor<i64>) -> tensor<i64> {
    %c0 = stablehlo.constant dense<5000000000> : tensor<i64> loc(#add)
    %a0 = stablehlo.add %n, %c0 : tensor<i64> loc(#add)
    %c1 = stablehlo.constant dense<5000000000> : tensor<i64> loc(#add)
    %a1 = stablehlo.add %a0, %c1 : tensor<i64> loc(#add)
    %c2 = stablehlo.constant dense<5000000000> : tensor<i64> loc(#add)
    %a2 = stablehlo.add %a1, %c2 : tensor<i64> loc(#add)
    %c3 = stablehlo.constant dense<5000000000> : tensor<i64> loc(#add)
    %a3 = stablehlo.add %a2, %c3 : tensor<i64> loc(#add)
    %c4 = stablehlo.constant dense<5000000000> : tensor<i64> loc(#add)
    %a4 = stablehlo.add %a3, %c4 : tensor<i64> loc(#add)
    return %a4 : tensor<i64>
  }
}
#add = loc("jit(step)/add"("model.py":7:12))
