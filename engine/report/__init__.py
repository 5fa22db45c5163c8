"""What leaves Goodput: incident exports, the HTML report's charts, the palette and labels, anonymisation
and CSV safety."""
