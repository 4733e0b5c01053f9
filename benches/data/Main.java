package demo.app;

import java.util.List;
import java.util.ArrayList;

public class Main {
    private static final int LIMIT = 10;

    // Collects squares below a limit.
    public static List<Integer> squares(int n) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(i * i);
        }
        return out;
    }

    /* Entry point. */
    public static void main(String[] args) {
        List<Integer> s = squares(LIMIT);
        String msg = "count: " + s.size();
        if (s.size() > 3) {
            System.out.println(msg);
        } else {
            System.out.println("few");
        }
    }
}
