package shapes;

// A small multi-file program for `javac` to compile (tools/lab/traces/record-traces.sh): sealed
// interfaces, records, enums, generics, streams and pattern matching, so javac loads a fair share
// of its own classes.
public sealed interface Shape permits Circle, Rectangle, Polygon {
  double area();

  default String describe() {
    return switch (this) {
      case Circle c -> "circle r=" + c.radius();
      case Rectangle r when r.width() == r.height() -> "square " + r.width();
      case Rectangle r -> "rectangle " + r.width() + "x" + r.height();
      case Polygon p -> "polygon of " + p.points().size() + " points";
    };
  }
}
