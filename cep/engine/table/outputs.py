"""Query outputs into tables: insert, delete on, update on, insert overwrite (update or insert).

Each is the end of a query chain: it gets the selector's output rows (already only the kinds
the query wants) and applies them to the table in order, one event at a time (a later event in
the batch sees what an earlier one did)."""

from cep.engine.processor import Processor


class TableInsert(Processor):
    def __init__(self, table, reorder=None):
        super().__init__()
        self.table = table
        self.reorder = reorder  # output position per table column, or None (same order)

    def process(self, batch):
        if self.reorder is None:
            self.table.insert([r for _, r, _ in batch])
        else:
            idx = self.reorder
            self.table.insert([tuple(r[i] for i in idx) for _, r, _ in batch])

    def clone(self):
        return TableInsert(self.table, self.reorder)


class TableDelete(Processor):
    def __init__(self, table, cond, key):
        super().__init__()
        self.table, self.cond, self.key = table, cond, key

    def process(self, batch):
        self.table.delete([r for _, r, _ in batch], self.cond, self.key)

    def clone(self):
        return TableDelete(self.table, self.cond, self.key)


class TableUpdate(Processor):
    """`update T on c` (insert_row None) or `insert overwrite T on c` (insert_row set)."""

    def __init__(self, table, cond, key, setter, insert_row=None):
        super().__init__()
        self.table, self.cond, self.key = table, cond, key
        self.setter, self.insert_row = setter, insert_row

    def process(self, batch):
        self.table.update(
            [r for _, r, _ in batch], self.cond, self.setter, self.key, self.insert_row
        )

    def clone(self):
        return TableUpdate(self.table, self.cond, self.key, self.setter, self.insert_row)
