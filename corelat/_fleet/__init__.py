"""_fleet"""
