package demo.store;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** A small inventory with reservations and a low-stock report. */
public class Inventory {
    private final Map<String, Integer> stock = new HashMap<>();
    private final Map<String, Double> prices = new HashMap<>();
    private int reservations = 0;

    public Inventory() {
    }

    // Adds units of an item, creating it with a price on first use.
    public void add(String sku, int units, double price) {
        if (units <= 0) {
            throw new IllegalArgumentException("units must be positive: " + units);
        }
        int current = stock.getOrDefault(sku, 0);
        stock.put(sku, current + units);
        prices.putIfAbsent(sku, price);
    }

    /* Reserves units if enough are in stock; returns whether it did. */
    public boolean reserve(String sku, int units) {
        Integer current = stock.get(sku);
        if (current == null || current < units) {
            return false;
        }
        stock.put(sku, current - units);
        reservations += 1;
        return true;
    }

    public double value() {
        double total = 0.0;
        for (Map.Entry<String, Integer> e : stock.entrySet()) {
            total += e.getValue() * prices.getOrDefault(e.getKey(), 0.0);
        }
        return total;
    }

    public List<String> lowStock(int threshold) {
        List<String> out = new ArrayList<>();
        for (String sku : stock.keySet()) {
            if (stock.get(sku) < threshold) {
                out.add(sku);
            }
        }
        out.sort(null);
        return out;
    }

    public static void main(String[] args) {
        Inventory inv = new Inventory();
        inv.add("apple", 40, 0.25);
        inv.add("pear", 3, 0.4);
        inv.add("fig", 12, 1.5);
        boolean ok = inv.reserve("pear", 2) && !inv.reserve("fig", 100);
        int i = 0;
        while (i < args.length) {
            inv.add(args[i], 1, 9.99);
            i++;
        }
        System.out.println("value: " + inv.value() + ", ok: " + ok);
        System.out.println("low: " + inv.lowStock(5) + " after " + inv.reservations + " reservations");
    }
}
