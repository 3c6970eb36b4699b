"""_measure"""
