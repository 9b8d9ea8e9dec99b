package payload;

public final class Circle implements Shape {
  private final double r;

  public Circle(double r) {
    this.r = r;
  }

  @Override
  public double area() {
    return Math.PI * r * r;
  }

  @Override
  public Kind kind() {
    return Kind.ROUND;
  }
}
