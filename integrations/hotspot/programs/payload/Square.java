package payload;

public final class Square implements Shape {
  private final double side;

  public Square(double side) {
    this.side = side;
  }

  @Override
  public double area() {
    return side * side;
  }

  @Override
  public Kind kind() {
    return Kind.ANGULAR;
  }
}
