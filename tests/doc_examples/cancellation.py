"""The function the float-pairs guide measures."""


def cancellation(x):
    big = x + 1e8
    return big - 1e8  # 1e8 + x in float32 has no digits of x below 8
