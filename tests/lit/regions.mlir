// Values carried through calls and regions, each bounded through them.

// A private function returning two values, each bounded through the call.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=-1000:1000 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 7
// CHECK-LABEL: func.func public @main(%arg0: tensor<4xi32>
// CHECK-SAME:    -> (tensor<4xi32>, tensor<4xi32>) {
// CHECK-NEXT:    %[[R:.*]]:2 = call @pair(%arg0) : (tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>)
// CHECK-NEXT:    return %[[R]]#0, %[[R]]#1 : tensor<4xi32>, tensor<4xi32>
// CHECK-LABEL: func.func private @pair(%arg0: tensor<4xi32>
// CHECK-SAME:    -> (tensor<4xi32>, tensor<4xi32>) {
// CHECK-NEXT:    %[[C:.*]] = stablehlo.constant dense<1000000> : tensor<4xi32>
// CHECK-NEXT:    %[[M:.*]] = stablehlo.multiply %arg0, %[[C]] : tensor<4xi32>
// CHECK-NEXT:    %[[N:.*]] = stablehlo.negate %arg0 : tensor<4xi32>
// CHECK-NEXT:    return %[[N]], %[[M]] : tensor<4xi32>, tensor<4xi32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %r:2 = func.call @pair(%x) : (tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>)
  return %r#0, %r#1 : tensor<4xi64>, tensor<4xi64>
}
func.func private @pair(%a: tensor<4xi64>) -> (tensor<4xi64>, tensor<4xi64>) {
  %c = stablehlo.constant dense<1000000> : tensor<4xi64>
  %m = stablehlo.multiply %a, %c : tensor<4xi64>
  %n = stablehlo.negate %a : tensor<4xi64>
  return %n, %m : tensor<4xi64>, tensor<4xi64>
}

// -----

// A case with two results per branch, each branch bounded.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=0:2 --range 1=-1000:1000 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 7
// CHECK-LABEL: func.func public @main(%arg0: tensor<i32>
// CHECK:         %[[R:.*]]:2 = "stablehlo.case"(%arg0) ({
// CHECK-NEXT:      %[[C7:.*]] = stablehlo.constant dense<7> : tensor<i32>
// CHECK-NEXT:      %[[A:.*]] = stablehlo.add %arg1, %[[C7]] : tensor<i32>
// CHECK-NEXT:      stablehlo.return %[[A]], %arg1 : tensor<i32>, tensor<i32>
// CHECK-NEXT:    }, {
// CHECK-NEXT:      %[[C1000:.*]] = stablehlo.constant dense<1000> : tensor<i32>
// CHECK-NEXT:      %[[M:.*]] = stablehlo.multiply %arg1, %[[C1000]] : tensor<i32>
// CHECK-NEXT:      stablehlo.return %arg1, %[[M]] : tensor<i32>, tensor<i32>
// CHECK-NEXT:    }) : (tensor<i32>) -> (tensor<i32>, tensor<i32>)
// CHECK-NEXT:    return %[[R]]#0, %[[R]]#1 : tensor<i32>, tensor<i32>
// CHECK-NOT:     i64>
func.func public @main(%k: tensor<i32>, %x: tensor<i64>) -> (tensor<i64>, tensor<i64>) {
  %r:2 = "stablehlo.case"(%k) ({
    %c = stablehlo.constant dense<7> : tensor<i64>
    %a = stablehlo.add %x, %c : tensor<i64>
    stablehlo.return %a, %x : tensor<i64>, tensor<i64>
  }, {
    %c = stablehlo.constant dense<1000> : tensor<i64>
    %m = stablehlo.multiply %x, %c : tensor<i64>
    stablehlo.return %x, %m : tensor<i64>, tensor<i64>
  }) : (tensor<i32>) -> (tensor<i64>, tensor<i64>)
  return %r#0, %r#1 : tensor<i64>, tensor<i64>
}

// -----

// A counted loop (10 trips) adding a bounded input to an accumulator.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=-1000:1000 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 15
// CHECK-LABEL: func.func public @main(%arg0: tensor<i32>
// CHECK-NEXT:    %[[Z:.*]] = stablehlo.constant dense<0> : tensor<i32>
// CHECK-NEXT:    %[[R:.*]]:3 = stablehlo.while(%[[I:.*]] = %[[Z]], %[[ACC:.*]] = %[[Z]], %[[V:.*]] = %arg0) : tensor<i32>, tensor<i32>, tensor<i32>
// CHECK-NEXT:    cond {
// CHECK-NEXT:      %[[N:.*]] = stablehlo.constant dense<10> : tensor<i32>
// CHECK-NEXT:      %[[P:.*]] = stablehlo.compare LT, %[[I]], %[[N]], SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
// CHECK-NEXT:      stablehlo.return %[[P]] : tensor<i1>
// CHECK-NEXT:    } do {
// CHECK-NEXT:      %[[ONE:.*]] = stablehlo.constant dense<1> : tensor<i32>
// CHECK-NEXT:      %[[I1:.*]] = stablehlo.add %[[I]], %[[ONE]] : tensor<i32>
// CHECK-NEXT:      %[[A1:.*]] = stablehlo.add %[[ACC]], %[[V]] : tensor<i32>
// CHECK-NEXT:      stablehlo.return %[[I1]], %[[A1]], %[[V]] : tensor<i32>, tensor<i32>, tensor<i32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[R]]#0, %[[R]]#1 : tensor<i32>, tensor<i32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<i64>) -> (tensor<i64>, tensor<i64>) {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %r:3 = stablehlo.while(%i = %zero, %acc = %zero, %v = %x) : tensor<i64>, tensor<i64>, tensor<i64>
   cond {
    %n = stablehlo.constant dense<10> : tensor<i64>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i64>
    %i1 = stablehlo.add %i, %one : tensor<i64>
    %a1 = stablehlo.add %acc, %v : tensor<i64>
    stablehlo.return %i1, %a1, %v : tensor<i64>, tensor<i64>, tensor<i64>
  }
  return %r#0, %r#1 : tensor<i64>, tensor<i64>
}

// -----

// An argsort: keys sorted with an iota payload; both results exact.
// RUN: no64 convert %s -o %t.mlir --policy strict --range 0=-2147483648:2147483647 | filecheck %s --check-prefix=REPORT --match-full-lines
// RUN: filecheck %s --input-file %t.mlir
// REPORT: verdicts: exact 8
// CHECK-LABEL: func.func public @main(%arg0: tensor<8xi32>
// CHECK-NEXT:    %[[I:.*]] = stablehlo.iota dim = 0 : tensor<8xi32>
// CHECK-NEXT:    %[[R:.*]]:2 = "stablehlo.sort"(%arg0, %[[I]]) <{dimension = 0 : i64, is_stable = true}> ({
// CHECK-NEXT:    ^bb0(%[[A:.*]]: tensor<i32>{{.*}}, %[[B:.*]]: tensor<i32>{{.*}}, %{{.*}}: tensor<i32>{{.*}}, %{{.*}}: tensor<i32>{{.*}}):
// CHECK-NEXT:      %[[P:.*]] = stablehlo.compare LT, %[[A]], %[[B]], SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
// CHECK-NEXT:      stablehlo.return %[[P]] : tensor<i1>
// CHECK-NEXT:    }) : (tensor<8xi32>, tensor<8xi32>) -> (tensor<8xi32>, tensor<8xi32>)
// CHECK-NEXT:    return %[[R]]#0, %[[R]]#1 : tensor<8xi32>, tensor<8xi32>
// CHECK-NOT:     i64>
func.func public @main(%x: tensor<8xi64>) -> (tensor<8xi64>, tensor<8xi64>) {
  %i = stablehlo.iota dim = 0 : tensor<8xi64>
  %r:2 = "stablehlo.sort"(%x, %i) ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>, %c: tensor<i64>, %d: tensor<i64>):
    %p = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }) {dimension = 0 : i64, is_stable = true} : (tensor<8xi64>, tensor<8xi64>) -> (tensor<8xi64>, tensor<8xi64>)
  return %r#0, %r#1 : tensor<8xi64>, tensor<8xi64>
}
