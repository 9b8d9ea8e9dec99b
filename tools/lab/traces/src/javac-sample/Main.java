import java.util.List;
import java.util.Map;
import shapes.Circle;
import shapes.Polygon;
import shapes.Rectangle;
import shapes.Shape;

public class Main {
  record Named(String name, double area) implements Comparable<Named> {
    public int compareTo(Named o) { return Double.compare(area, o.area); }
  }

  public static void main(String[] args) {
    List<Shape> shapes = List.of(new Circle(1), new Rectangle(2, 3), new Rectangle(2, 2),
        new Polygon(List.of(new Polygon.Point(0, 0), new Polygon.Point(4, 0), new Polygon.Point(0, 3))));
    Inventory<Named> inventory = new Inventory<>();
    for (Shape s : shapes) inventory.add(new Named(s.describe(), s.area()));
    Map<Boolean, List<Named>> big = inventory.groupBy(n -> n.area() > 4);
    System.out.println(inventory.largest().orElseThrow() + " " + big.keySet());
    for (Color c : Color.values()) System.out.println(c + " " + c.hex());
    System.out.println(inventory.map(Named::name));
  }
}
