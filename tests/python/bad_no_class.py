def on_input(port, data):
    pass
