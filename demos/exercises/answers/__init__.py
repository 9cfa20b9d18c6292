"""The reference answers of the workbook, one file per exercise (read them after trying)."""
