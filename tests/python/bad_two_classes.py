class First:
    def on_input(self, port, data):
        pass


class Second:
    def on_input(self, port, data):
        pass
