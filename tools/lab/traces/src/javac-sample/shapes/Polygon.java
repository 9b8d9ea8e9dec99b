package shapes;

import java.util.List;

public record Polygon(List<Point> points) implements Shape {
  public record Point(double x, double y) {}

  public Polygon {
    points = List.copyOf(points);
  }

  // The shoelace formula.
  public double area() {
    double twice = 0;
    for (int i = 0; i < points.size(); i++) {
      Point a = points.get(i), b = points.get((i + 1) % points.size());
      twice += a.x() * b.y() - b.x() * a.y();
    }
    return Math.abs(twice) / 2;
  }
}
