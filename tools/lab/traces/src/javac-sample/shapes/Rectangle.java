package shapes;

public record Rectangle(double width, double height) implements Shape {
  public double area() { return width * height; }
}
